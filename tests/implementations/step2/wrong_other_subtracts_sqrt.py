"""wrong_other_subtracts_sqrt: subtracts sqrt(d_k) instead of dividing by it.
Expected diagnosis: none
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) - np.sqrt(d_k)
