"""wrong_transpose_all_axes__no_scale: np.dot with K.T, and no scaling (SciPy softmax).
Expected diagnosis: transpose-all-axes, no-scale
"""

import numpy as np
from scipy.special import softmax


def attention(Q, K, V):
    scores = np.dot(Q, K.T)
    return softmax(scores, axis=-1) @ V
