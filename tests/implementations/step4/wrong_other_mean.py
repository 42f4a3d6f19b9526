"""wrong_other_mean: divides the weighted sum by n_k (a mean, not a sum).
Expected diagnosis: none
"""

import numpy as np


def weighted_sum(weights, V):
    weights = np.asarray(weights)
    return (weights @ np.asarray(V)) / weights.shape[-1]
