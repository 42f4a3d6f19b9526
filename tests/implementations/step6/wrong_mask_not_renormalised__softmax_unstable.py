"""wrong_mask_not_renormalised__softmax_unstable: exp without a shift, then zeroes the blocked weights afterwards.
Expected diagnosis: mask-not-renormalised, softmax-unstable
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    w = np.where(mask, w, 0.0)
    return w @ V
