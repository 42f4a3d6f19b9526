"""correct_float64_upcast: upcasts to float64 and returns float64 even for float32 input (a different dtype)."""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    m = np.expand_dims(np.max(x, axis=axis), axis)
    e = np.exp(x - m)
    return e / np.expand_dims(np.sum(e, axis=axis), axis)
