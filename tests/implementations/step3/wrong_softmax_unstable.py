"""wrong_softmax_unstable: exp(x) / sum(exp(x)) with no max subtraction, so large inputs overflow to NaN.
Expected diagnosis: softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(np.asarray(x))
    return e / np.sum(e, axis=axis, keepdims=True)
