"""correct_longdouble: computes in np.longdouble and returns that dtype (a different dtype)."""

import numpy as np


def scale_scores(scores, d_k):
    s = np.asarray(scores, dtype=np.longdouble)
    return s / np.sqrt(np.longdouble(d_k))
