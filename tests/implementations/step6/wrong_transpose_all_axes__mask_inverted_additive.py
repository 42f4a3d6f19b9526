"""wrong_transpose_all_axes__mask_inverted_additive: K.T and an additive mask * -1e9 that blocks the allowed pairs.
Expected diagnosis: transpose-all-axes, mask-inverted
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    s = Q @ K.T / np.sqrt(Q.shape[-1]) + mask * -1e9
    return sm(s) @ V
