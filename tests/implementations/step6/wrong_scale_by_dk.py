"""wrong_scale_by_dk: masks correctly but divides the scores by d_k instead of sqrt(d_k).
Expected diagnosis: scale-by-dk
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / Q.shape[-1], -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
