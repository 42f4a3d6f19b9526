"""wrong_ignores_axis__softmax_unstable: written for a matrix: always normalises axis 1 (np.expand_dims; the wrong axis of a 3-D input), no max shift.
Expected diagnosis: softmax-wrong-axis, ignores-axis, softmax-unstable
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.expand_dims(np.sum(e, axis=1), 1)
