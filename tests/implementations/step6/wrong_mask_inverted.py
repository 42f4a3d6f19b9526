"""wrong_mask_inverted: treats True as blocked, so queries see exactly the keys they should not.
Expected diagnosis: mask-inverted
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(mask, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
