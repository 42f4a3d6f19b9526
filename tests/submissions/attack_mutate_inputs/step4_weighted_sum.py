"""Correct: weights @ V."""

import numpy as np


def weighted_sum(weights, V):
    return np.asarray(weights) @ np.asarray(V)
