"""wrong_dot_not_batched: np.dot with swapped K: right for 2-D, pairs every batch entry with every other for 3-D.
Expected diagnosis: dot-not-batched
"""

import numpy as np


def dot_scores(Q, K):
    return np.dot(Q, np.swapaxes(K, -1, -2))
