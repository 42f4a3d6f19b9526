"""wrong_transpose_all_axes: uses K.T, which reverses every axis, so batched input breaks.
Expected diagnosis: transpose-all-axes
"""

import numpy as np


def dot_scores(Q, K):
    return np.asarray(Q) @ np.asarray(K).T
