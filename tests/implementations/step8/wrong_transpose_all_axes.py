"""wrong_transpose_all_axes: per-head scores with k.T, which reverses every axis of a batched slice.
Expected diagnosis: transpose-all-axes
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        c = slice(h * d_h, (h + 1) * d_h)
        s = Q[..., c] @ K[..., c].T / np.sqrt(d_h)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ V[..., c])
    return np.concatenate(heads, axis=-1) @ W_o
