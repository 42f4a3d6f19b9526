"""wrong_other_int_cast: casts the result to int, truncating every value.
Expected diagnosis: none
"""

import numpy as np


def scale_scores(scores, d_k):
    return (np.asarray(scores) / np.sqrt(d_k)).astype(int)
