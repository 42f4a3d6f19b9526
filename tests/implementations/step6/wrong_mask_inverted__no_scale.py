"""wrong_mask_inverted__no_scale: blocks where the mask is True, and never scales.
Expected diagnosis: mask-inverted, no-scale
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    s = np.matmul(Q, np.swapaxes(K, -1, -2))
    s = np.where(mask, -1e9, s)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return np.matmul(w / w.sum(axis=-1, keepdims=True), V)
