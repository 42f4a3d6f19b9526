"""correct_scipy_softmax: uses scipy.special.softmax for the weights and math.sqrt for the scale."""

import math

import numpy as np
from scipy.special import softmax


def attention(Q, K, V):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(np.asarray(K), -1, -2) / math.sqrt(Q.shape[-1])
    return softmax(scores, axis=-1) @ np.asarray(V)
