"""Attack: return an ndarray subclass (holding zeros) whose ==, !=, ufuncs and __array__ all lie."""

import numpy as np


class Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)

    def __ne__(self, other):
        return np.zeros(np.shape(self), dtype=bool)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(np.shape(self), dtype=bool) if ufunc in (np.greater, np.not_equal) else 0.0

    def __array__(self, dtype=None, copy=None):
        return np.ones(np.shape(self))

    def __len__(self):
        return 0


def dot_scores(Q, K):
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1]).view(Liar)
