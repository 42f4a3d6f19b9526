"""wrong_ignores_axis__fixed_rank_inplace_loop: an in-place loop over x[i]: rows of a matrix whatever axis says; a vector becomes ones, each slice of a batch is normalised whole.
Expected diagnosis: ignores-axis, fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    out = np.array(x, dtype=float)
    for i in range(out.shape[0]):
        out[i] = np.exp(out[i] - np.max(out[i]))
        out[i] /= np.sum(out[i])
    return out
