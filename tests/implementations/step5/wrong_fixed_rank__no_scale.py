"""wrong_fixed_rank__no_scale: an einsum written for 2-D arrays, and no scaling.
Expected diagnosis: fixed-rank, no-scale
"""

import numpy as np


def attention(Q, K, V):
    s = np.einsum("id,jd->ij", Q, K)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return np.einsum("ij,jd->id", e / e.sum(axis=1, keepdims=True), V)
