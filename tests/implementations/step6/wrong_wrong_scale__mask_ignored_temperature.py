"""wrong_wrong_scale__mask_ignored_temperature: `mask` never read, a temperature argument of 2.0.
Expected diagnosis: wrong-scale, mask-ignored
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask, temperature=2.0):
    return sm(Q @ sw(K) / temperature) @ V
