"""wrong_no_output_projection__heads_concat_wrong_axis: heads stacked as rows then reshaped, and no W_o.
Expected diagnosis: no-output-projection, heads-concat-wrong-axis
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
    out = np.concatenate(heads, axis=-2)
    return out.reshape(Z.shape)
