"""correct_tolist: right values, returned as nested Python lists."""

import numpy as np


def weighted_sum(weights, V):
    return (np.asarray(weights) @ np.asarray(V)).tolist()
