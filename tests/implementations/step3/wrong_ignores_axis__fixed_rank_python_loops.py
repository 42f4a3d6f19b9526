"""wrong_ignores_axis__fixed_rank_python_loops: two Python loops with math.exp over rows: matrices only.
Expected diagnosis: ignores-axis, fixed-rank
"""

import math

import numpy as np


def softmax(x, axis=-1):
    out = np.zeros_like(x, dtype=float)
    for i in range(x.shape[0]):
        m = max(x[i])
        tot = sum(math.exp(v - m) for v in x[i])
        for j in range(x.shape[1]):
            out[i][j] = math.exp(x[i][j] - m) / tot
    return out
