"""wrong_scale_by_dk__softmax_unstable: divides by d_k and never subtracts the max.
Expected diagnosis: scale-by-dk, softmax-unstable
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    s = np.einsum("...qd,...kd->...qk", Q, K) / Q.shape[-1]
    e = np.exp(s)
    return np.einsum("...qk,...kv->...qv", e / e.sum(-1, keepdims=True), V)
