"""wrong_scale_by_dk: divides by d_k instead of sqrt(d_k).
Expected diagnosis: scale-by-dk
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) / d_k
