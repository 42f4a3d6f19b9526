"""wrong_fixed_rank: handles rows or columns of a 2-D matrix only; 1-D and batched input fail.
Expected diagnosis: fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    n_rows, n_cols = x.shape
    if axis in (0, -2):
        return softmax(x.T, axis=1).T
    out = np.empty((n_rows, n_cols))
    for i in range(n_rows):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out
