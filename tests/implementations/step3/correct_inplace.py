"""correct_inplace: shifts, exponentiates and normalises the caller's array in place and returns it (allowed)."""

import numpy as np


def softmax(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=axis, keepdims=True)
    return x
