"""wrong_no_output_projection__scale_by_dmodel: scales every head by sqrt(d_model) and never applies W_o.
Expected diagnosis: no-output-projection, scale-by-dmodel
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q, k, v = (X[..., h * d_h:(h + 1) * d_h] for X in (Q, K, V))
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(Z.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1)
