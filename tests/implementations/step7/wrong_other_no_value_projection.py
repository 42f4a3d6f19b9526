"""wrong_other_no_value_projection: mixes the raw rows of Z instead of Z @ W_v.
Expected diagnosis: none
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K = Z @ W_q, Z @ W_k
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ Z
