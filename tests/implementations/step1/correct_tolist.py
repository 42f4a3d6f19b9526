"""correct_tolist: right values, but returned as nested Python lists via .tolist()."""

import numpy as np


def dot_scores(Q, K):
    scores = np.matmul(Q, np.moveaxis(np.asarray(K), -1, -2))
    return scores.tolist()
