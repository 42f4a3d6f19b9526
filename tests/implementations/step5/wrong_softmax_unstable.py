"""wrong_softmax_unstable: exp(scores) / sum without subtracting the max, so large scores give NaN.
Expected diagnosis: softmax-unstable
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True) @ V
