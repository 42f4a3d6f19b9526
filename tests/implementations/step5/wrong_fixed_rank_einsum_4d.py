"""wrong_fixed_rank_einsum_4d: einsum 'bhqd,bhkd->bhqk': (batch, heads, seq, d) input only.
Expected diagnosis: fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    s = np.einsum("bhqd,bhkd->bhqk", Q, K) / np.sqrt(Q.shape[-1])
    return np.einsum("bhqk,bhkd->bhqd", sm(s), V)
