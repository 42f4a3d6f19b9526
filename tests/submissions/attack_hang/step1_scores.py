"""Attack: an infinite loop inside the function."""

import numpy as np


def dot_scores(Q, K):
    while True:
        pass
