"""correct_mutates_input: doubles Q in place and halves the result, so the caller's Q is left changed (allowed)."""

import numpy as np


def dot_scores(Q, K):
    Q *= 2
    return (Q @ np.swapaxes(K, -1, -2)) / 2
