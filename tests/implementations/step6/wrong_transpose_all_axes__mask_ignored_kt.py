"""wrong_transpose_all_axes__mask_ignored_kt: K.T, and `mask` never read.
Expected diagnosis: transpose-all-axes, mask-ignored
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    return sm(Q @ K.T / np.sqrt(Q.shape[-1])) @ V
