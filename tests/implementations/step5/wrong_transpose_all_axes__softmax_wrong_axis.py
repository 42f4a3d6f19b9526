"""wrong_transpose_all_axes__softmax_wrong_axis: written for matrices: K.T and a softmax over axis 1 (the queries axis of a batch).
Expected diagnosis: transpose-all-axes, softmax-wrong-axis
"""

import numpy as np


def attention(Q, K, V):
    scores = (Q @ K.T) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
