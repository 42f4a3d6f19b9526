"""correct_loops: loops over batch index and query, with a pure-Python stable softmax per query row."""

import math

import numpy as np


def attention(Q, K, V):
    Q = np.asarray(Q)
    K = np.asarray(K)
    V = np.asarray(V)
    batch_shape = Q.shape[:-2]
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    out = np.zeros(batch_shape + (n_q, d_v))
    for b in np.ndindex(*batch_shape):
        q, k, v = Q[b], K[b], V[b]
        for i in range(n_q):
            scores = [float(np.dot(q[i], k[j])) / math.sqrt(d_k) for j in range(n_k)]
            m = max(scores)
            exps = [math.exp(s - m) for s in scores]
            total = sum(exps)
            row = np.zeros(d_v)
            for j in range(n_k):
                row += (exps[j] / total) * v[j]
            out[b + (i,)] = row
    return out
