"""correct_power_half: multiplies by d_k ** -0.5 instead of dividing by a square root."""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) * d_k ** -0.5
