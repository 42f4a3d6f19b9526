"""wrong_other_returns_weights: returns the attention weights and forgets to multiply by V.
Expected diagnosis: none
"""

import numpy as np


def attention(Q, K, V):
    Q, K = np.asarray(Q), np.asarray(K)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
