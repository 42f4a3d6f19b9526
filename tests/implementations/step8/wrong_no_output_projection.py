"""wrong_no_output_projection: concatenates the heads and forgets to multiply by W_o.
Expected diagnosis: no-output-projection
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        c = slice(h * d_h, (h + 1) * d_h)
        s = Q[..., c] @ np.swapaxes(K[..., c], -1, -2) / np.sqrt(d_h)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ V[..., c])
    return np.concatenate(heads, axis=-1)
