"""wrong_transpose_all_axes__softmax_wrong_axis_axis0: K.T and softmax over axis 0.
Expected diagnosis: transpose-all-axes, softmax-wrong-axis
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return sm(Q @ K.T / np.sqrt(K.shape[-1]), axis=0) @ V
