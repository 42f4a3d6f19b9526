"""wrong_heads_no_transpose__fixed_rank_2d_only: reshape(n_heads, T, d) without moving the head axis, 2-D only.
Expected diagnosis: heads-no-transpose, fixed-rank
"""

import math

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    T, C = Z.shape
    d = C // n_heads
    q = (Z @ W_q).reshape(n_heads, T, d)
    k = (Z @ W_k).reshape(n_heads, T, d)
    v = (Z @ W_v).reshape(n_heads, T, d)
    y = sm(q @ k.transpose(0, 2, 1) / math.sqrt(d)) @ v
    return y.reshape(T, C) @ W_o
