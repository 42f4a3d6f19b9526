"""wrong_fixed_rank_3d_only: K.transpose(0, 2, 1) and K.shape[2]: 3-D only.
Expected diagnosis: fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    B, T, C = Z.shape
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return sm(Q @ K.transpose(0, 2, 1) / np.sqrt(K.shape[2])) @ V
