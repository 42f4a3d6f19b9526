"""wrong_softmax_wrong_axis: normalises the weights over the queries (axis -2) instead of the keys.
Expected diagnosis: softmax-wrong-axis
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-2, keepdims=True))
    return e / e.sum(axis=-2, keepdims=True) @ V
