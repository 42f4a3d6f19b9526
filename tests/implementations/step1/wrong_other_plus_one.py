"""wrong_other_plus_one: off by a constant: adds 1 to every score.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2) + 1
