"""correct_np_matmul_transpose_axes: np.matmul with np.transpose given the axes tuple that swaps the last two."""

import math

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    axes = tuple(range(K.ndim - 2)) + (K.ndim - 1, K.ndim - 2)
    scores = np.matmul(Q, np.transpose(K, axes)) / math.sqrt(Q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return np.matmul(weights, V)
