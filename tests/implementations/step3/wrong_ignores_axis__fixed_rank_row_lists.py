"""wrong_ignores_axis__fixed_rank_row_lists: a list of rows, each with max(row) and math.exp: matrices only.
Expected diagnosis: ignores-axis, fixed-rank
"""

import math

import numpy as np


def softmax(x, axis=-1):
    rows = []
    for row in x:
        m = max(row)
        ex = [math.exp(v - m) for v in row]
        t = sum(ex)
        rows.append([e / t for e in ex])
    return np.array(rows)
