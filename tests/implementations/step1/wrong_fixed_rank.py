"""wrong_fixed_rank: unpacks Q.shape into two names, so it works only for 2-D input.
Expected diagnosis: fixed-rank
"""

import numpy as np


def dot_scores(Q, K):
    n_q, d_k = Q.shape
    n_k, _ = K.shape
    out = np.empty((n_q, n_k))
    for i in range(n_q):
        out[i] = np.dot(K, Q[i])
    return out
