"""wrong_transpose_all_axes: computes (V.T @ weights.T).T, and .T reverses every axis so batches break.
Expected diagnosis: transpose-all-axes
"""

import numpy as np


def weighted_sum(weights, V):
    return (np.asarray(V).T @ np.asarray(weights).T).T
