"""Correct: divide by sqrt(d_k)."""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
