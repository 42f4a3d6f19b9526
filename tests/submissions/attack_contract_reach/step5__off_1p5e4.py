"""Correct attention, then 1.5e-4 (relative) off on float32 input."""
import numpy as np


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = e / e.sum(axis=-1, keepdims=True) @ V
    return out * (1 + 1.5e-4) if np.asarray(Q).dtype == np.float32 else out
