"""Correct softmax computed in place in x (the caller's array changes)."""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype.kind != 'f':
        x = x.astype(float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    np.subtract(x, m, out=x)
    np.exp(x, out=x)
    x /= np.sum(x, axis=axis, keepdims=True)
    return x
