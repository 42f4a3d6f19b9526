"""correct_inplace: divides the caller's array in place and returns it (mutation is allowed, earns a note)."""

import math


def scale_scores(scores, d_k):
    scores /= math.sqrt(d_k)
    return scores
