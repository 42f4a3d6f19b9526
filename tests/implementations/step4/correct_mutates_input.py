"""correct_mutates_input: rescales the caller's weights in place by 2 and halves the result (mutation is allowed)."""

import numpy as np


def weighted_sum(weights, V):
    weights *= 2.0
    return (weights @ V) * 0.5
