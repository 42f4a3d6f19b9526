"""Attack (with conftest/ini files): a wrong answer."""

import numpy as np


def dot_scores(Q, K):
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
