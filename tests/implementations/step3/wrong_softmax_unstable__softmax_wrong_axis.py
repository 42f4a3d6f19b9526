"""wrong_softmax_unstable__softmax_wrong_axis: exp without shifting, normalised along axis 0 whatever `axis` says.
Expected diagnosis: softmax-unstable, softmax-wrong-axis
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=0, keepdims=True)
