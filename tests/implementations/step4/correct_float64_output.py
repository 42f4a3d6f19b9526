"""correct_float64_output: always works in and returns float64 (a different dtype for float32 input)."""

import numpy as np


def weighted_sum(weights, V):
    return np.asarray(weights, dtype=np.float64) @ np.asarray(V, dtype=np.float64)
