"""wrong_ignores_axis__fixed_rank_3d_only: written for a batch of matrices: axis=2 hard-coded, so a matrix raises, a 4-D input is normalised along axis 2 and axis is never read.
Expected diagnosis: ignores-axis, fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=2, keepdims=True))
    return e / np.sum(e, axis=2, keepdims=True)
