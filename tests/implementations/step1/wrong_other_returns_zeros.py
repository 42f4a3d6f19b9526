"""wrong_other_returns_zeros: returns an array of zeros of the right shape.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    return np.zeros(Q.shape[:-1] + (K.shape[-2],))
