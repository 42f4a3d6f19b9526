"""wrong_fixed_rank__weights_transposed: 2-D loops (shape unpacked) that read weights.T[i, j] instead of weights[i, j].
Expected diagnosis: fixed-rank, weights-transposed
"""

import numpy as np


def weighted_sum(weights, V):
    n_q, n_k = weights.shape
    out = np.zeros((n_q, V.shape[1]))
    for i in range(n_q):
        for j in range(n_k):
            out[i] += weights.T[i, j] * V[j]
    return out
