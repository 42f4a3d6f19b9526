"""correct_tolist: stable softmax returned as nested Python lists."""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return (e / e.sum(axis=axis, keepdims=True)).tolist()
