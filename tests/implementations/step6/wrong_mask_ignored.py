"""wrong_mask_ignored: plain attention that never looks at the mask.
Expected diagnosis: mask-ignored
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
