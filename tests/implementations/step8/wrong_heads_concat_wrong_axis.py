"""wrong_heads_concat_wrong_axis: stacks the head outputs on a new last axis, which interleaves their columns.
Expected diagnosis: heads-concat-wrong-axis
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q, k, v = (X[..., h * d_h:(h + 1) * d_h] for X in (Q, K, V))
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ v)
    return np.stack(heads, axis=-1).reshape(Z.shape) @ W_o
