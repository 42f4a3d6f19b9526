"""wrong_softmax_axes_differ: the max over axis, the sum over the last axis.
Expected diagnosis: softmax-axes-differ
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
