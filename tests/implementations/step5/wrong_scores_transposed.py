"""wrong_scores_transposed: builds the scores as K Q^T (keys by queries) and carries on.
Expected diagnosis: scores-transposed
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
