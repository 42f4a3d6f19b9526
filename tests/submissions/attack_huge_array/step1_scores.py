"""Attack: return a 20-million-element array (160 MB, lazily zeroed)."""

import numpy as np


def dot_scores(Q, K):
    return np.zeros(20_000_000)
