"""wrong_other_mean_of_values: gives every key the same weight (the mean of V) for every query.
Expected diagnosis: none
"""

import numpy as np


def attention(Q, K, V):
    Q, V = np.asarray(Q), np.asarray(V)
    mean = V.mean(axis=-2, keepdims=True)
    return np.repeat(mean, Q.shape[-2], axis=-2)
