"""wrong_softmax_wrong_axis__no_scale: softmax over axis 0 and no scaling.
Expected diagnosis: softmax-wrong-axis, no-scale
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True) @ V
