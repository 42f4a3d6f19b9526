"""Attack: hard-code the lesson's worked example (scores [2, 0, 1])."""

import numpy as np


def dot_scores(Q, K):
    return np.array([[2.0, 0.0, 1.0]])
