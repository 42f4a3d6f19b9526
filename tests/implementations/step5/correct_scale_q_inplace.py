"""correct_scale_q_inplace: divides the caller's Q by sqrt(d_k) in place before the product (mutation is allowed)."""

import math

import numpy as np


def attention(Q, K, V):
    Q /= math.sqrt(Q.shape[-1])
    scores = np.matmul(Q, np.swapaxes(K, -1, -2))
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.matmul(weights, V)
