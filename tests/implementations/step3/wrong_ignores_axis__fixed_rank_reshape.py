"""wrong_ignores_axis__fixed_rank_reshape: np.max(x, axis=1).reshape(-1, 1): rows of a matrix whatever axis says; a vector or a batch raises.
Expected diagnosis: ignores-axis, fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=1).reshape(-1, 1)
    exps = np.exp(shifted)
    return exps / np.sum(exps, axis=1).reshape(-1, 1)
