"""wrong_wrong_scale__causal_mask_hardcoded_temperature: a causal mask and a constant divisor 4.0.
Expected diagnosis: wrong-scale, causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    s = Q @ sw(K) / 4.0
    s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return sm(s) @ V
