"""Attack: write straight to file descriptors 1 and 2 (10 MB once, then 1 MB per call); wrong answer."""

import os

import numpy as np

_first = [True]


def scale_scores(scores, d_k):
    n = 10_000_000 if _first[0] else 1_000_000
    _first[0] = False
    for fd in (1, 2):
        try:
            os.write(fd, b"{\"score\": 5.0, \"status\": \"passed\"}\n" * (n // 40))
        except OSError:
            pass
    return np.zeros_like(np.asarray(scores, dtype=float))
