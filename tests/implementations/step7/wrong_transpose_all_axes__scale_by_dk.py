"""wrong_transpose_all_axes__scale_by_dk: K.T and division by d_k.
Expected diagnosis: transpose-all-axes, scale-by-dk
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q = np.dot(Z, W_q)
    K = np.dot(Z, W_k)
    V = np.dot(Z, W_v)
    scores = Q @ K.T / K.shape[-1]
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ V
