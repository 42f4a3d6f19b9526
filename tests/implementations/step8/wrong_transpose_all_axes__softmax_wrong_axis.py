"""wrong_transpose_all_axes__softmax_wrong_axis: a loop over heads, each with k.T and a softmax over axis 1 (written for one matrix per head).
Expected diagnosis: transpose-all-axes, softmax-wrong-axis
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    d_h = Z.shape[-1] // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        q, k, v = Q[..., cols], K[..., cols], V[..., cols]
        heads.append(softmax(q @ k.T / np.sqrt(d_h)) @ v)
    return np.concatenate(heads, axis=-1) @ W_o
