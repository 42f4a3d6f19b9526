"""Attack: compute the right answer, then scribble over the inputs in place."""

import numpy as np


def dot_scores(Q, K):
    out = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
    Q[...] = 7.0
    K[...] = -3.0
    return out
