"""wrong_fixed_rank_4d_only: written for (batch, heads, n, d) input: a hard-coded four-axis einsum.
Expected diagnosis: fixed-rank
"""

import numpy as np


def attention(Q, K, V):
    scores = np.einsum("bhqd,bhkd->bhqk", Q, K) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", w, V)
