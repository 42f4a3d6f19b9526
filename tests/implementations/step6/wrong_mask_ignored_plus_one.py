"""wrong_mask_ignored_plus_one: `mask` never read, and 1 added to the output.
Expected diagnosis: mask-ignored
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    return sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V + 1.0
