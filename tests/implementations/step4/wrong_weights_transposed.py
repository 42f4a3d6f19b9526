"""wrong_weights_transposed: multiplies V by weights^T instead of weights.
Expected diagnosis: weights-transposed
"""

import numpy as np


def weighted_sum(weights, V):
    return np.swapaxes(np.asarray(weights), -1, -2) @ np.asarray(V)
