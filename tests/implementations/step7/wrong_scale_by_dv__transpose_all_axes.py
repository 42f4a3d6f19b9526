"""wrong_scale_by_dv__transpose_all_axes: scales with d_v and uses K.T.
Expected diagnosis: transpose-all-axes, scale-by-dv
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    s = Q @ K.T / np.sqrt(V.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
