"""wrong_ignores_axis__fixed_rank_list: returns a list of lists, one softmax per row: axis is never read, and only a matrix works.
Expected diagnosis: ignores-axis, fixed-rank
"""

import numpy as np


def softmax(x, axis=-1):
    rows = []
    for row in np.asarray(x, dtype=float):
        e = np.exp(row - max(row))
        rows.append((e / e.sum()).tolist())
    return rows
