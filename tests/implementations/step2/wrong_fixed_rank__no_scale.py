"""wrong_fixed_rank__no_scale: loops over two axes and copies the scores unscaled.
Expected diagnosis: fixed-rank, no-scale
"""

import numpy as np


def scale_scores(scores, d_k):
    rows, cols = scores.shape
    out = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            out[i, j] = scores[i, j]
    return out
