"""wrong_multiplied_by_sqrt__weights_transposed: multiplies by sqrt(d_k) and uses the weights transposed.
Expected diagnosis: multiplied-by-sqrt, weights-transposed
"""

import math

import numpy as np


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) * math.sqrt(Q.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    w = e / np.sum(e, axis=-1, keepdims=True)
    return np.swapaxes(w, -1, -2) @ V
