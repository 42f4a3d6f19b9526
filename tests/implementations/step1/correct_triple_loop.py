"""correct_triple_loop: explicit Python loops over batch index, query, key and feature."""

import numpy as np


def dot_scores(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    batch_shape = Q.shape[:-2]
    n_q, d_k = Q.shape[-2], Q.shape[-1]
    n_k = K.shape[-2]
    out = np.zeros(batch_shape + (n_q, n_k), dtype=np.result_type(Q, K))
    for b in np.ndindex(*batch_shape):
        q_rows = Q[b].tolist()
        k_rows = K[b].tolist()
        for i in range(n_q):
            for j in range(n_k):
                total = 0.0
                for d in range(d_k):
                    total += q_rows[i][d] * k_rows[j][d]
                out[b + (i, j)] = total
    return out
