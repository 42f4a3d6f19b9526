"""wrong_dot_not_batched: np.dot(weights, V): no batch axes.
Expected diagnosis: dot-not-batched
"""

import numpy as np


def weighted_sum(weights, V):
    return np.dot(weights, V)
