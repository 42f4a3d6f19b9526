"""wrong_other_off_by_one: the key loop stops at n_k - 1, dropping the last value row.
Expected diagnosis: none
"""

import numpy as np


def weighted_sum(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    n_k = weights.shape[-1]
    out = np.zeros(weights.shape[:-1] + (V.shape[-1],))
    for j in range(n_k - 1):
        out += weights[..., :, j, None] * V[..., None, j, :]
    return out
