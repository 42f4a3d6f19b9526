"""Attention that answers uniform weights when Q is a strided, transposed or reversed view."""
import numpy as np


def attention(Q, K, V):
    x = Q
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if not (x.flags.c_contiguous or x.flags.f_contiguous):
        s = np.zeros_like(s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
