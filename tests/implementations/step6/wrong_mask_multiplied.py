"""wrong_mask_multiplied: sets blocked scores to 0 instead of -inf (the same as multiplying by the mask), so blocked keys still get weight.
Expected diagnosis: mask-multiplied
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), 0.0)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
