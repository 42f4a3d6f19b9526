"""correct_scale_q_inplace: scales the caller's Q in place (allowed) and masks with np.putmask on a broadcast copy."""

import math

import numpy as np


def masked_attention(Q, K, V, mask):
    Q /= math.sqrt(Q.shape[-1])
    scores = Q @ np.swapaxes(K, -1, -2)
    blocked = np.broadcast_to(~np.asarray(mask, dtype=bool), scores.shape)
    np.putmask(scores, blocked, -np.inf)
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return weights @ V
