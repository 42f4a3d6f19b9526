"""wrong_transpose_all_axes__no_scale_gpt: K.T and no scaling.
Expected diagnosis: transpose-all-axes, no-scale
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    return sm(np.where(mask, Q @ K.T, -np.inf)) @ V
