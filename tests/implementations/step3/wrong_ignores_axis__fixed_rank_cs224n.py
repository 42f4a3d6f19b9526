"""wrong_ignores_axis__fixed_rank_cs224n: CS224n style: a vector branch and a matrix branch that reshapes max and sum to (rows, 1); axis is never read, 3-D input raises.
Expected diagnosis: ignores-axis, fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.array(x, dtype=float)
    if len(x.shape) > 1:
        tmp = np.max(x, axis=1)
        x -= tmp.reshape((x.shape[0], 1))
        x = np.exp(x)
        tmp = np.sum(x, axis=1)
        x /= tmp.reshape((x.shape[0], 1))
    else:
        x -= np.max(x)
        x = np.exp(x)
        x /= np.sum(x)
    return x
