"""wrong_other_base2: uses 2 ** x instead of e ** x (stable, normalised, but the wrong base).
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    p = np.power(2.0, x - np.max(x, axis=axis, keepdims=True))
    return p / np.sum(p, axis=axis, keepdims=True)
