"""Attack: return a non-array object that claims the right shape, equals everything and converts to zeros."""

import numpy as np


class Claims:
    def __init__(self, shape):
        self.shape = shape
        self.dtype = np.dtype(float)

    def __eq__(self, other):
        return True

    def __array__(self, dtype=None, copy=None):
        return np.zeros(self.shape)

    def __array_ufunc__(self, *a, **k):
        return True

    def __array_function__(self, *a, **k):
        return True


def scale_scores(scores, d_k):
    return Claims(np.shape(scores))
