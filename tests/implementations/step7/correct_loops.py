"""correct_loops: loops over batch index and query position with a pure-Python softmax per row."""

import math

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    batch_shape = Z.shape[:-2]
    n = Z.shape[-2]
    d_k = np.shape(W_q)[1]
    d_v = np.shape(W_v)[1]
    out = np.zeros(batch_shape + (n, d_v))
    for b in np.ndindex(*batch_shape):
        q = Z[b] @ W_q
        k = Z[b] @ W_k
        v = Z[b] @ W_v
        for i in range(n):
            scores = [float(q[i] @ k[j]) / math.sqrt(d_k) for j in range(n)]
            m = max(scores)
            exps = [math.exp(s - m) for s in scores]
            total = sum(exps)
            for j in range(n):
                out[b + (i,)] += (exps[j] / total) * v[j]
    return out
