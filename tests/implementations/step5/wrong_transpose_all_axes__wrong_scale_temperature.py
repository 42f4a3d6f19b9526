"""wrong_transpose_all_axes__wrong_scale_temperature: K.T and a temperature of 10.0.
Expected diagnosis: transpose-all-axes, wrong-scale
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V, temperature=10.0):
    return sm(Q @ K.T / temperature) @ V
