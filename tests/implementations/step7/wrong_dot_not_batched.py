"""wrong_dot_not_batched: np.dot everywhere (fine for the projections, not for the batched products).
Expected diagnosis: dot-not-batched
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = np.dot(Z, W_q), np.dot(Z, W_k), np.dot(Z, W_v)
    scores = np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return np.dot(e / np.sum(e, axis=-1, keepdims=True), V)
