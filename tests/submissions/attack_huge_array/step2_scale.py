"""Attack: return a 10^12-element broadcast view (no memory behind it)."""

import numpy as np


def scale_scores(scores, d_k):
    return np.broadcast_to(0.0, (1_000_000, 1_000_000))
