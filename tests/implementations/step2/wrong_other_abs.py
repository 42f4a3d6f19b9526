"""wrong_other_abs: takes the absolute value of the scores first, so negative scores come out positive.
Expected diagnosis: none
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.abs(np.asarray(scores)) / np.sqrt(d_k)
