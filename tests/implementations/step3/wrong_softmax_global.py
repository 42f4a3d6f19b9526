"""wrong_softmax_global: subtracts the global max and divides by the sum over the whole array.
Expected diagnosis: softmax-global
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x))
    return e / np.sum(e)
