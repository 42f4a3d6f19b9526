"""wrong_transpose_all_axes__wrong_scale_dmodel: K.T and scaled by sqrt(d_model).
Expected diagnosis: transpose-all-axes, wrong-scale
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return sm(Q @ K.T / np.sqrt(Z.shape[-1])) @ V
