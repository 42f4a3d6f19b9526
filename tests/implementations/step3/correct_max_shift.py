"""correct_max_shift: the standard vectorised softmax that subtracts the slice maximum before exp."""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
