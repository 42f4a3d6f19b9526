"""wrong_fixed_rank_4d_only: B, H, T, C = Z.shape: runs on 4-D input only.
Expected diagnosis: fixed-rank
"""

import math

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    B, H, T, C = Z.shape
    d = C // n_heads
    q = (Z @ W_q).reshape(B, H, T, n_heads, d).transpose(0, 1, 3, 2, 4)
    k = (Z @ W_k).reshape(B, H, T, n_heads, d).transpose(0, 1, 3, 2, 4)
    v = (Z @ W_v).reshape(B, H, T, n_heads, d).transpose(0, 1, 3, 2, 4)
    y = sm(q @ k.transpose(0, 1, 2, 4, 3) / math.sqrt(d)) @ v
    return y.transpose(0, 1, 3, 2, 4).reshape(B, H, T, C) @ W_o
