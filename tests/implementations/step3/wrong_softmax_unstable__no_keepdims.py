"""wrong_softmax_unstable__no_keepdims: no max subtraction and a sum without keepdims (lines up with the wrong axis).
Expected diagnosis: softmax-wrong-axis, softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis)
