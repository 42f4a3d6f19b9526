"""wrong_wrong_scale_temperature: a temperature argument (default 8.0) for the scale.
Expected diagnosis: wrong-scale
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V, temperature=8.0):
    return sm(Q @ sw(K) / temperature) @ V
