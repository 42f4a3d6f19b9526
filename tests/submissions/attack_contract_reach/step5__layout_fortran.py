"""Attention that answers uniform weights when Q is a Fortran-ordered input."""
import numpy as np


def attention(Q, K, V):
    x = Q
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if x.ndim >= 2 and x.flags.f_contiguous and not x.flags.c_contiguous:
        s = np.zeros_like(s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
