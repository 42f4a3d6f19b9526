"""wrong_causal_mask_hardcoded_gpt_heads: (batch, heads, seq, d) layout with a causal mask.
Expected diagnosis: causal-mask-hardcoded
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
    def split(X): return np.swapaxes(X.reshape(*lead, T, n_heads, d), -2, -3)
    q, k, v = split(Z @ W_q), split(Z @ W_k), split(Z @ W_v)
    att = q @ sw(k) / math.sqrt(d)
    att = np.where(np.tril(np.ones((T, T), dtype=bool)), att, -np.inf)
    y = sm(att) @ v
    y = np.swapaxes(y, -2, -3).reshape(*lead, T, C)
    return y @ W_o
