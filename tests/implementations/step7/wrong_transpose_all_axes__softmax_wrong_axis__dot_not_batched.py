"""wrong_transpose_all_axes__softmax_wrong_axis__dot_not_batched: np.dot everywhere, K.T, softmax over axis 1 (a 2-D-only tutorial).
Expected diagnosis: transpose-all-axes, softmax-wrong-axis, dot-not-batched
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q = np.dot(Z, W_q)
    K = np.dot(Z, W_k)
    V = np.dot(Z, W_v)
    scores = np.dot(Q, K.T) / np.sqrt(Q.shape[-1])
    return np.dot(softmax(scores), V)
