"""Attack: unbounded recursion inside the function."""

import numpy as np


def dot_scores(Q, K):
    return dot_scores(Q, K) + 0
