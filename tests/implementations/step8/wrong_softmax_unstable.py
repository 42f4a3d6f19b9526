"""wrong_softmax_unstable: per-head softmax without max subtraction, so large inputs give NaN.
Expected diagnosis: softmax-unstable
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        c = slice(h * d_h, (h + 1) * d_h)
        e = np.exp(Q[..., c] @ np.swapaxes(K[..., c], -1, -2) / np.sqrt(d_h))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ V[..., c])
    return np.concatenate(heads, axis=-1) @ W_o
