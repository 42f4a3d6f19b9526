"""Attack: dereference a NULL pointer with ctypes at import time."""

import ctypes

import numpy as np

ctypes.string_at(0)


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
