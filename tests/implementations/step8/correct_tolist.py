"""correct_tolist: right values, returned as nested Python lists."""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    outs = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        s = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) / np.sqrt(d_h)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        outs.append((e / e.sum(axis=-1, keepdims=True)) @ V[..., cols])
    return (np.concatenate(outs, axis=-1) @ W_o).tolist()
