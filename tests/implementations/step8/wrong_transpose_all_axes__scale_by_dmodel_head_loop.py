"""wrong_transpose_all_axes__scale_by_dmodel_head_loop: a head loop with k.T, scaled by sqrt(d_model).
Expected diagnosis: transpose-all-axes, scale-by-dmodel
"""

import math

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d = Z.shape[-1] // n_heads
    outs = []
    for h in range(n_heads):
        q = (Z @ W_q)[..., h*d:(h+1)*d]; k = (Z @ W_k)[..., h*d:(h+1)*d]; v = (Z @ W_v)[..., h*d:(h+1)*d]
        outs.append(sm(q @ k.T / math.sqrt(Z.shape[-1])) @ v)
    return np.concatenate(outs, -1) @ W_o
