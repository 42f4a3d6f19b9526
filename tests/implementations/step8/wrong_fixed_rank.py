"""wrong_fixed_rank: reshapes with Z.shape unpacked as (n, d_model) and transposes with (1, 0, 2), so only 2-D Z works.
Expected diagnosis: fixed-rank
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    n, d_model = Z.shape
    d_h = d_model // n_heads
    Q = (Z @ W_q).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    K = (Z @ W_k).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    V = (Z @ W_v).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(d_h)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    heads = e / e.sum(axis=-1, keepdims=True) @ V
    return heads.transpose(1, 0, 2).reshape(n, d_model) @ W_o
