"""wrong_wrong_scale_isqrt: math.isqrt(d_k) with a -1e9 fill.
Expected diagnosis: wrong-scale
"""

import math

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    s = Q @ sw(K) / math.isqrt(K.shape[-1])
    return sm(np.where(mask, s, -1e9)) @ V
