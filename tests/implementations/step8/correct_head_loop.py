"""correct_head_loop: loops over heads, slicing column blocks of the projections, then concatenates and applies W_o."""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o
