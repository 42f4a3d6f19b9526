"""wrong_projections_swapped__no_scale: keys made with W_v and values with W_k, and no scaling.
Expected diagnosis: projections-swapped, no-scale
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_v, Z @ W_k
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
