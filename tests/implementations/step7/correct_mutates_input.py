"""correct_mutates_input: doubles the caller's Z in place for the value path and halves V back (mutation is allowed)."""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Q = Z @ W_q
    K = Z @ W_k
    Z *= 2.0
    V = (Z @ W_v) / 2.0
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
