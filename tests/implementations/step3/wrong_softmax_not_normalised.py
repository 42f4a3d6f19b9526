"""wrong_softmax_not_normalised: returns exp(x) without dividing by the sum.
Expected diagnosis: softmax-not-normalised
"""

import numpy as np


def softmax(x, axis=-1):
    return np.exp(np.asarray(x))
