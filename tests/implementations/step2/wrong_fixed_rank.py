"""wrong_fixed_rank: a double loop over rows and columns into a 2-D result, so only 2-D input works.
Expected diagnosis: fixed-rank
"""

import math

import numpy as np


def scale_scores(scores, d_k):
    rows, cols = scores.shape[0], scores.shape[1]
    out = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            out[i, j] = scores[i, j] / math.sqrt(d_k)
    return out
