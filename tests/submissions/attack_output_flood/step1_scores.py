"""Attack: flood stdout at import (20 MB) and on every call, with fake pytest lines; answers correctly."""

import sys

import numpy as np

for _ in range(20):
    try:
        print("=" * 20 + " 6 passed in 0.01s " + "=" * 20 + "x" * 1_000_000)
    except OSError:
        break


def dot_scores(Q, K):
    try:
        print("PASSED " * 20_000)
        sys.stderr.write("E" * 100_000)
    except OSError:
        pass
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
