"""step2, 2-D only: a double loop over rows and columns."""

import math

import numpy as np


def scale_scores(scores, d_k):
    scores = np.asarray(scores, dtype=float)
    rows, cols = scores.shape
    return np.array([[scores[i, j] / math.sqrt(d_k) for j in range(cols)] for i in range(rows)])
