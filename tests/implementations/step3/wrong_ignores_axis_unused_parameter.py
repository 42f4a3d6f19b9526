"""wrong_ignores_axis_unused_parameter: accepts axis and never uses it: always the last axis.
Expected diagnosis: ignores-axis
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    z = x - x.max(axis=-1, keepdims=True)
    numerator = np.exp(z)
    denominator = numerator.sum(axis=-1, keepdims=True)
    return numerator / denominator
