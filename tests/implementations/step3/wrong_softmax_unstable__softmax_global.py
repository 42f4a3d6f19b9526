"""wrong_softmax_unstable__softmax_global: one sum over the whole array, and no max subtraction.
Expected diagnosis: softmax-global, softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    exps = np.exp(x)
    total = np.sum(exps)
    return exps / total
