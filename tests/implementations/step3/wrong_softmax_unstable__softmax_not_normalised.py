"""wrong_softmax_unstable__softmax_not_normalised: returns exp(x) as it is: no shift, no sum.
Expected diagnosis: softmax-not-normalised, softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    return np.power(np.e, np.asarray(x, dtype=float))
