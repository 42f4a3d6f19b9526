"""wrong_transpose_all_axes__fixed_rank_reshape: a loop over heads with k.T and a reshape(-1, 1) softmax that only works on a matrix.
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import numpy as np


def softmax(x):
    x = x - np.max(x, axis=1).reshape(-1, 1)
    e = np.exp(x)
    return e / np.sum(e, axis=1).reshape(-1, 1)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    d_h = Z.shape[-1] // n_heads
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        heads.append(softmax(q @ k.T / np.sqrt(d_h)) @ v)
    return np.concatenate(heads, axis=-1) @ W_o
