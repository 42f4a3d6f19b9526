"""Attack: sys.exit(0) while the grader imports the file."""

import sys

import numpy as np

sys.exit(0)


def dot_scores(Q, K):
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
