"""wrong_scores_transposed: returns K Q^T, shape (..., n_k, n_q), instead of Q K^T.
Expected diagnosis: scores-transposed
"""

import numpy as np


def dot_scores(Q, K):
    return np.asarray(K) @ np.swapaxes(np.asarray(Q), -1, -2)
