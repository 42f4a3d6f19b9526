"""correct_loops: loops over batch index and query, taking a pure-Python softmax over only the allowed keys."""

import math

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    batch_shape = Q.shape[:-2]
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), batch_shape + (n_q, n_k))
    out = np.zeros(batch_shape + (n_q, d_v))
    for b in np.ndindex(*batch_shape):
        for i in range(n_q):
            allowed = [j for j in range(n_k) if mask[b + (i, j)]]
            scores = [float(Q[b + (i,)] @ K[b + (j,)]) / math.sqrt(d_k) for j in allowed]
            m = max(scores)
            exps = [math.exp(s - m) for s in scores]
            total = sum(exps)
            row = np.zeros(d_v)
            for j, e in zip(allowed, exps):
                row += (e / total) * V[b + (j,)]
            out[b + (i,)] = row
    return out
