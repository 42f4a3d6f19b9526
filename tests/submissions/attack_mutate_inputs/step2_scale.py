"""Attack: zero the input in place, then compute from it (a wrong answer)."""

import numpy as np


def scale_scores(scores, d_k):
    scores[...] = 0.0
    return scores / np.sqrt(d_k)
