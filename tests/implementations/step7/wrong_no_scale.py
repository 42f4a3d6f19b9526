"""wrong_no_scale: projects correctly but never divides the scores by sqrt(d_k).
Expected diagnosis: no-scale
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
