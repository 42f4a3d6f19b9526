"""wrong_projections_swapped__softmax_unstable: queries made with W_k, and exp without a shift.
Expected diagnosis: projections-swapped, softmax-unstable
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_k, Z @ W_k, Z @ W_v
    e = np.exp(Q @ np.swapaxes(K, -1, -2) / np.sqrt(W_q.shape[1]))
    return e / e.sum(axis=-1, keepdims=True) @ V
