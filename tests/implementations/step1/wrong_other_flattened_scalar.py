"""wrong_other_flattened_scalar: takes one dot product of the flattened arrays, returning a scalar.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    return np.dot(np.asarray(Q).flatten(), np.asarray(K).flatten())
