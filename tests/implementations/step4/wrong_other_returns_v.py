"""wrong_other_returns_v: returns V unchanged, ignoring the weights.
Expected diagnosis: none
"""

import numpy as np


def weighted_sum(weights, V):
    return np.asarray(V)
