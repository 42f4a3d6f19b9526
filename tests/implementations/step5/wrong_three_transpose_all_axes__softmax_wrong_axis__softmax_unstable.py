"""wrong_three_transpose_all_axes__softmax_wrong_axis__softmax_unstable: a tutorial's version: np.dot with K.T and a softmax over axis 1 without the max shift.
Expected diagnosis: transpose-all-axes, softmax-wrong-axis, softmax-unstable
"""

import numpy as np


def softmax(x):
    return np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True)


def attention(Q, K, V):
    scores = np.dot(Q, K.T)
    d_k = K.shape[1]
    return softmax(scores / np.sqrt(d_k)) @ V
