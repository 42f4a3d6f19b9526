"""Attack: return a 100-million-element array (800 MB, lazily zeroed)."""

import numpy as np


def dot_scores(Q, K):
    return np.zeros(100_000_000)
