"""wrong_projections_swapped__no_output_projection: queries and keys swapped, and no W_o.
Expected diagnosis: projections-swapped, no-output-projection
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    *batch, n, d_model = Z.shape
    d_h = d_model // n_heads

    def split(X):
        return np.swapaxes(X.reshape(*batch, n, n_heads, d_h), -2, -3)

    Q, K, V = split(Z @ W_k), split(Z @ W_q), split(Z @ W_v)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = e / e.sum(axis=-1, keepdims=True) @ V
    return np.swapaxes(out, -2, -3).reshape(*batch, n, d_model)
