"""wrong_other_rounds: rounds the scaled scores to two decimals.
Expected diagnosis: none
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.round(np.asarray(scores) / np.sqrt(d_k), 2)
