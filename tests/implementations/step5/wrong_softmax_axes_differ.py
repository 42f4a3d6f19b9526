"""wrong_softmax_axes_differ: the max is taken over the queries axis (-2), the sum over the keys.
Expected diagnosis: softmax-axes-differ
"""

import numpy as np


def attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    return np.matmul(e / np.sum(e, axis=-1, keepdims=True), V)
