"""wrong_transpose_all_axes_tolist: projections, then K.T; returns a list (.tolist()).
Expected diagnosis: transpose-all-axes
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / np.sqrt(W_k.shape[1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ V).tolist()
