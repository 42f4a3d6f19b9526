"""wrong_other_negated: returns -(Q K^T): right shape, wrong sign.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    return -(np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2))
