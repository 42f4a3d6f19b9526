"""Attack: invalid UTF-8 ÿþ in the file."""

import numpy as np


def weighted_sum(weights, V):
    return np.asarray(weights) @ np.asarray(V)
