"""Attack: a right answer with one NaN slipped in."""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    out = e / np.sum(e, axis=axis, keepdims=True)
    out.flat[0] = np.nan
    return out
