"""wrong_transpose_all_axes__softmax_wrong_axis: written for matrices: Q @ K.T / sqrt(K.shape[1]), blocked scores set to -1e9, softmax over axis 1.
Expected diagnosis: transpose-all-axes, softmax-wrong-axis
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    scores = Q @ K.T / np.sqrt(K.shape[1])
    scores = np.where(mask, scores, -1e9)
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = scores / scores.sum(axis=1, keepdims=True)
    return weights @ V
