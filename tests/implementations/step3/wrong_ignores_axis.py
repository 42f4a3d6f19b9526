"""wrong_ignores_axis: accepts `axis` but always normalises along the last axis.
Expected diagnosis: ignores-axis
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
