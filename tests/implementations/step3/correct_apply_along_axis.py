"""correct_apply_along_axis: a 1-D softmax applied to every slice with np.apply_along_axis."""

import numpy as np


def softmax(x, axis=-1):
    def softmax_1d(v):
        e = np.exp(v - v.max())
        return e / e.sum()

    return np.apply_along_axis(softmax_1d, axis, np.asarray(x))
