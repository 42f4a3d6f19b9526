"""wrong_mask_multiplied__softmax_unstable: scores times the mask, exp without a shift.
Expected diagnosis: mask-multiplied, softmax-unstable
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s * mask)
    return e / e.sum(axis=-1, keepdims=True) @ V
