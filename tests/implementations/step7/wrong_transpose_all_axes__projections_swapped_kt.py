"""wrong_transpose_all_axes__projections_swapped_kt: K.T with W_q and W_k swapped.
Expected diagnosis: transpose-all-axes, projections-swapped
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_k, Z @ W_q, Z @ W_v
    return sm(Q @ K.T / np.sqrt(K.shape[-1])) @ V
