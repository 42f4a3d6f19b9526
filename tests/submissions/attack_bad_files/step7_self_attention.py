"""Correct self-attention (the one good step in this folder)."""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
