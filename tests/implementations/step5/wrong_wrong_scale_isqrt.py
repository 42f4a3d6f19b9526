"""wrong_wrong_scale_isqrt: math.isqrt(d_k): the floor of the square root.
Expected diagnosis: wrong-scale
"""

import math

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    return sm(Q @ sw(K) / math.isqrt(Q.shape[-1])) @ V
