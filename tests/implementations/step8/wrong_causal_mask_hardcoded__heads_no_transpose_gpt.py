"""wrong_causal_mask_hardcoded__heads_no_transpose_gpt: heads reshaped without the transpose, and a causal mask.
Expected diagnosis: causal-mask-hardcoded, heads-no-transpose
"""

import math

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    *lead, T, C = Z.shape
    d = C // n_heads
    q = (Z @ W_q).reshape(*lead, n_heads, T, d); k = (Z @ W_k).reshape(*lead, n_heads, T, d); v = (Z @ W_v).reshape(*lead, n_heads, T, d)
    att = q @ sw(k) / math.sqrt(d)
    att = np.where(np.tril(np.ones((T, T), bool)), att, -np.inf)
    return (sm(att) @ v).reshape(*lead, T, C) @ W_o
