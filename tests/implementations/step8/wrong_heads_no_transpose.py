"""wrong_heads_no_transpose: reshapes (..., n, d_model) straight to (..., heads, n, d_h), mixing positions and heads.
Expected diagnosis: heads-no-transpose
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    *batch, n, d_model = Z.shape
    d_h = d_model // n_heads
    Q = (Z @ W_q).reshape(*batch, n_heads, n, d_h)
    K = (Z @ W_k).reshape(*batch, n_heads, n, d_h)
    V = (Z @ W_v).reshape(*batch, n_heads, n, d_h)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    heads = e / e.sum(axis=-1, keepdims=True) @ V
    return heads.reshape(*batch, n, d_model) @ W_o
