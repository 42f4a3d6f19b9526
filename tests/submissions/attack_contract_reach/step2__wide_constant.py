"""d_k above 1024 scaled by a constant (32, i.e. sqrt(1024))."""
import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) / (32.0 if d_k > 1024 else np.sqrt(d_k))
