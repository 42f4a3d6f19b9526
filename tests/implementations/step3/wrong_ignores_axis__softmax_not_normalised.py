"""wrong_ignores_axis__softmax_not_normalised: shifts by the last axis's max and never divides.
Expected diagnosis: ignores-axis, softmax-not-normalised
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return np.exp(x - x.max(axis=-1, keepdims=True))
