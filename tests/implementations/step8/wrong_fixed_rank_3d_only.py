"""wrong_fixed_rank_3d_only: B, T, C = Z.shape with transpose(0, 2, 1, 3): 3-D only.
Expected diagnosis: fixed-rank
"""

import math

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    B, T, C = Z.shape
    d = C // n_heads
    q = (Z @ W_q).reshape(B, T, n_heads, d).transpose(0, 2, 1, 3)
    k = (Z @ W_k).reshape(B, T, n_heads, d).transpose(0, 2, 1, 3)
    v = (Z @ W_v).reshape(B, T, n_heads, d).transpose(0, 2, 1, 3)
    y = sm(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)) @ v
    return y.transpose(0, 2, 1, 3).reshape(B, T, C) @ W_o
