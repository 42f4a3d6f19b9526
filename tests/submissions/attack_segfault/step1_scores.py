"""Attack: dereference a NULL pointer with ctypes inside the function."""

import ctypes

import numpy as np


def dot_scores(Q, K):
    ctypes.string_at(0)
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
