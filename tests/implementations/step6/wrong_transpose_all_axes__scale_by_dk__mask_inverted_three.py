"""wrong_transpose_all_axes__scale_by_dk__mask_inverted_three: K.T, a -1e9 fill where mask is True, and / d_k.
Expected diagnosis: transpose-all-axes, scale-by-dk, mask-inverted
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    return sm(np.where(mask, -1e9, Q @ K.T / Q.shape[-1])) @ V
