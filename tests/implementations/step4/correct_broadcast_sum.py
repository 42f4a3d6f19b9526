"""correct_broadcast_sum: broadcasts weights[..., :, :, None] * V[..., None, :, :] and sums over keys."""

import numpy as np


def weighted_sum(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    return np.sum(weights[..., :, :, None] * V[..., None, :, :], axis=-2)
