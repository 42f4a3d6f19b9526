"""wrong_mask_not_renormalised__scale_by_dk: divides by d_k and zeroes the weights after the softmax.
Expected diagnosis: mask-not-renormalised, scale-by-dk
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return (w * mask) @ V
