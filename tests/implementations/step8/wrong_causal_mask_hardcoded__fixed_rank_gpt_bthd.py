"""wrong_causal_mask_hardcoded__fixed_rank_gpt_bthd: B, T, C = Z.shape, transpose(0, 2, 1, 3) and a causal mask.
Expected diagnosis: causal-mask-hardcoded, fixed-rank
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
    att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    att = np.where(np.tril(np.ones((T, T))) == 0, -np.inf, att)
    y = sm(att) @ v
    return y.transpose(0, 2, 1, 3).reshape(B, T, C) @ W_o
