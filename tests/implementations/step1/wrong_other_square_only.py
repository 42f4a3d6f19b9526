"""wrong_other_square_only: uses n_q for both loop bounds, so it is wrong whenever n_q != n_k.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    n = Q.shape[-2]
    out = np.zeros(Q.shape[:-2] + (n, n), dtype=np.result_type(Q, K))
    for i in range(n):
        for j in range(n):
            out[..., i, j] = np.sum(Q[..., i, :] * K[..., j, :], axis=-1)
    return out
