"""wrong_fixed_rank_einsum_3d: einsum with 'bqd,bkd->bqk' and B, n, d = Q.shape: 3-D only.
Expected diagnosis: fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    B, n, d = Q.shape
    s = np.einsum("bqd,bkd->bqk", Q, K) / np.sqrt(d)
    s = np.where(mask, s, -np.inf)
    return np.einsum("bqk,bkd->bqd", sm(s), V)
