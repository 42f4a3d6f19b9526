"""wrong_wrong_scale_dmodel: scaled by sqrt(d_model), Z's width, not sqrt(d_k).
Expected diagnosis: wrong-scale
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return sm(Q @ sw(K) / np.sqrt(Z.shape[-1])) @ V
