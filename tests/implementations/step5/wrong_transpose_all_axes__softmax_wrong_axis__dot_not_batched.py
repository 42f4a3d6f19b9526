"""wrong_transpose_all_axes__softmax_wrong_axis__dot_not_batched: written for matrices: np.dot(Q, K.T) / sqrt(K.shape[1]), a softmax helper over axis 1, np.dot with V.
Expected diagnosis: transpose-all-axes, softmax-wrong-axis, dot-not-batched
"""

import numpy as np


def softmax(x):
    e_x = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e_x / e_x.sum(axis=1, keepdims=True)


def attention(Q, K, V):
    d_k = K.shape[1]
    scores = np.dot(Q, K.T) / np.sqrt(d_k)
    weights = softmax(scores)
    return np.dot(weights, V)
