"""wrong_fixed_rank: hard-codes one batch axis with np.transpose(K, (0, 2, 1)), so only 3-D input works.
Expected diagnosis: fixed-rank
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.matmul(Q, np.transpose(K, (0, 2, 1))) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.matmul(e / e.sum(axis=-1, keepdims=True), V)
