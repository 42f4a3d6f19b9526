"""Attack: answer NaN everywhere (NaN compares false with everything)."""

import numpy as np


def dot_scores(Q, K):
    return np.full(np.shape(Q)[:-1] + np.shape(K)[-2:-1], np.nan)
