"""Attack: return a complex array and a 32-dimensional one."""

import numpy as np


def weighted_sum(weights, V):
    out = np.asarray(weights) @ np.asarray(V)
    return out + 0j if out.size % 2 else out.reshape((1,) * 30 + out.shape)
