"""wrong_fixed_rank: unpacks Z.shape into (n, d_model) and uses np.dot(Q, K.T), so only an unbatched 2-D Z works.
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    n, d_model = Z.shape
    Q, K, V = np.dot(Z, W_q), np.dot(Z, W_k), np.dot(Z, W_v)
    scores = np.dot(Q, K.T) / np.sqrt(Q.shape[1])
    e = np.exp(scores - scores.max(axis=1).reshape(n, 1))
    return np.dot(e / e.sum(axis=1).reshape(n, 1), V)
