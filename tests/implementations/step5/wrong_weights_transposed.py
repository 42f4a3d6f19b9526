"""wrong_weights_transposed: multiplies V by the transposed weight matrix.
Expected diagnosis: weights-transposed
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return np.swapaxes(w, -1, -2) @ V
