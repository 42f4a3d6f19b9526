"""wrong_softmax_no_exp: divides the inputs by their sum along axis: no exp.
Expected diagnosis: softmax-no-exp
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return x / x.sum(axis=axis, keepdims=True)
