"""wrong_softmax_wrong_axis: always normalises down the columns (axis 0), whatever axis was asked for.
Expected diagnosis: softmax-wrong-axis
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)
