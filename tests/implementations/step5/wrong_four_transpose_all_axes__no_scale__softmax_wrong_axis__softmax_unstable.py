"""wrong_four_transpose_all_axes__no_scale__softmax_wrong_axis__softmax_unstable: K.T, no scaling, a softmax normalised over axis 1 with np.expand_dims and no shift.
Expected diagnosis: transpose-all-axes, no-scale, softmax-wrong-axis, softmax-unstable
"""

import numpy as np


def soft_max(z):
    t = np.exp(z)
    return np.exp(z) / np.expand_dims(np.sum(t, axis=1), 1)


def attention(Q, K, V):
    scores = Q @ K.T
    return soft_max(scores) @ V
