"""wrong_heads_no_transpose__no_scale: reshapes straight to (..., heads, n, d_h) and never scales.
Expected diagnosis: heads-no-transpose, no-scale
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    *batch, n, d_model = Z.shape
    d_h = d_model // n_heads
    Q, K, V = ((Z @ W).reshape(*batch, n_heads, n, d_h) for W in (W_q, W_k, W_v))
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = e / e.sum(axis=-1, keepdims=True) @ V
    return out.reshape(*batch, n, d_model) @ W_o
