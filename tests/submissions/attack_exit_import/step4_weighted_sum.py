"""Attack: raise a bare BaseException (not an Exception) at import time."""

import numpy as np

raise BaseException("stop grading")


def weighted_sum(weights, V):
    return np.asarray(weights) @ np.asarray(V)
