"""wrong_scale_by_dk__mask_ignored_dk: `mask` never read, divided by d_k.
Expected diagnosis: scale-by-dk, mask-ignored
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    return sm(Q @ sw(K) / Q.shape[-1]) @ V
