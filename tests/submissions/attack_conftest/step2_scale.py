"""Attack (with conftest/ini files): a wrong answer."""

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores, dtype=float)
