"""wrong_multiplied_by_sqrt: multiplies by sqrt(d_k) instead of dividing.
Expected diagnosis: multiplied-by-sqrt
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) * np.sqrt(d_k)
