"""Attention that looks only at the first 6 keys."""
import numpy as np


def attention(Q, K, V):
    K, V = K[..., :6, :], V[..., :6, :]
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
