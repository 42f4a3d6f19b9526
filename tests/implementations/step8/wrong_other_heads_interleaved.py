"""wrong_other_heads_interleaved: reshapes to (..., n, d_h, heads), so head h gets every n_heads-th column instead of a block.
Expected diagnosis: none
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    *batch, n, d_model = Z.shape
    d_h = d_model // n_heads

    def split(X):
        # (..., n, d_h, h) -> (..., h, n, d_h)
        return np.moveaxis(X.reshape(*batch, n, d_h, n_heads), -1, -3)

    Q, K, V = split(Z @ W_q), split(Z @ W_k), split(Z @ W_v)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    heads = e / e.sum(axis=-1, keepdims=True) @ V
    concat = np.moveaxis(heads, -3, -2).reshape(*batch, n, d_model)
    return concat @ W_o
