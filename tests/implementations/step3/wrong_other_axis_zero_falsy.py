"""wrong_other_axis_zero_falsy: `axis = axis or -1` turns axis=0 into the last axis (wrong only for axis=0).
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    axis = axis or -1
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
