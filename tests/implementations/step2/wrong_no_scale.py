"""wrong_no_scale: returns the scores without dividing by anything.
Expected diagnosis: no-scale
"""

import numpy as np


def scale_scores(scores, d_k):
    return np.array(scores, copy=True)
