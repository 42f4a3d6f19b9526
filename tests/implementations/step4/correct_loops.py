"""correct_loops: loops over batch, query and key, accumulating weights[i, j] * V[j] row by row."""

import numpy as np


def weighted_sum(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    batch_shape = weights.shape[:-2]
    n_q, n_k = weights.shape[-2:]
    d_v = V.shape[-1]
    out = np.zeros(batch_shape + (n_q, d_v), dtype=np.result_type(weights, V))
    for b in np.ndindex(*batch_shape):
        w = weights[b]
        v = V[b]
        for i in range(n_q):
            row = np.zeros(d_v, dtype=out.dtype)
            for j in range(n_k):
                row = row + w[i, j] * v[j]
            out[b + (i,)] = row
    return out
