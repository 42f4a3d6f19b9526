"""correct_float32_native: keeps every intermediate in Z's dtype (float32 stays float32)."""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    dtype = Z.dtype
    Q = (Z @ np.asarray(W_q, dtype=dtype))
    K = (Z @ np.asarray(W_k, dtype=dtype))
    V = (Z @ np.asarray(W_v, dtype=dtype))
    scores = (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(dtype.type(Q.shape[-1]))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ V).astype(dtype)
