"""wrong_other_square_only: the key loop runs over range(n_q), so it is wrong whenever n_q != n_k.
Expected diagnosis: none
"""

import numpy as np


def weighted_sum(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    n_q = weights.shape[-2]
    out = np.zeros(weights.shape[:-1] + (V.shape[-1],))
    for i in range(n_q):
        for j in range(n_q):
            out[..., i, :] += weights[..., i, j, None] * V[..., j, :]
    return out
