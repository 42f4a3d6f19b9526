"""wrong_softmax_sum_global: subtracts each slice's max (keepdims), then divides by the sum of the whole array.
Expected diagnosis: softmax-sum-global
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e)
