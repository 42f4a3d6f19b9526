"""Attack: answer +inf everywhere."""

import numpy as np


def scale_scores(scores, d_k):
    return np.full(np.shape(scores), np.inf)
