"""wrong_softmax_wrong_axis__softmax_unstable: exp of the raw scores, normalised over the queries.
Expected diagnosis: softmax-wrong-axis, softmax-unstable
"""

import numpy as np


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s)
    return e / e.sum(axis=-2, keepdims=True) @ V
