"""wrong_wrong_scale: divides by sqrt of the last axis length (n_k) instead of sqrt(d_k).
Expected diagnosis: wrong-scale
"""

import numpy as np


def scale_scores(scores, d_k):
    scores = np.asarray(scores)
    return scores / np.sqrt(scores.shape[-1])
