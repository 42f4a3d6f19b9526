"""wrong_wrong_scale__fixed_rank_einsum_3d: 3-D-only einsum with a constant divisor 3.0.
Expected diagnosis: wrong-scale, fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    B, n, d = Q.shape
    s = np.einsum("bqd,bkd->bqk", Q, K) / 3.0
    s = np.where(mask, s, -1e9)
    return np.einsum("bqk,bkd->bqd", sm(s), V)
