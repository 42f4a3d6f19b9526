"""step5: a per-row max with a sum over the whole array (shifted per slice, normalised globally)."""

import numpy as np


def attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(K.shape[-1])
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = weights / weights.sum()
    return np.matmul(weights, V)
