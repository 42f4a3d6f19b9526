"""Attack: counts its calls; from the 30th on it answers wrong (first-come order tells)."""

import numpy as np

SEEN = [0]


def scale_scores(scores, d_k):
    SEEN[0] += 1
    out = np.asarray(scores) / np.sqrt(d_k)
    return out if SEEN[0] < 30 else out * 1.01
