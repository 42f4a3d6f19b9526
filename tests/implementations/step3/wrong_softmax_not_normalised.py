"""wrong_softmax_not_normalised: returns exp(x) without dividing by the sum (and without a shift, so large input overflows).
Expected diagnosis: softmax-not-normalised, softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    return np.exp(np.asarray(x))
