"""Attack: os._exit(0) while the grader imports the file (no cleanup, no exception)."""

import os

import numpy as np

os._exit(0)


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
