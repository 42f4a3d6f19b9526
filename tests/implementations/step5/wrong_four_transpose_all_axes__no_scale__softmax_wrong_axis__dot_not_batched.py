"""wrong_four_transpose_all_axes__no_scale__softmax_wrong_axis__dot_not_batched: a from-scratch tutorial: np.dot(Q, K.T) unscaled, softmax over axis 1, np.dot with V.
Expected diagnosis: transpose-all-axes, no-scale, softmax-wrong-axis, dot-not-batched
"""

import numpy as np


def attention(Q, K, V):
    scores = np.dot(Q, K.T)
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=1, keepdims=True)
    return np.dot(weights, V)
