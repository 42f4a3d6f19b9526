"""wrong_softmax_wrong_axis__ignores_axis_axis1: axis=1 hard-coded (right for the rows of a matrix): ignores axis, and a 3-D input with the default is normalised along axis 1, not the last.
Expected diagnosis: softmax-wrong-axis, ignores-axis
"""

import numpy as np


def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e_x / e_x.sum(axis=1, keepdims=True)
