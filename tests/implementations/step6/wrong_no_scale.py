"""wrong_no_scale: masks correctly but never divides the scores by sqrt(d_k).
Expected diagnosis: no-scale
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2), -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
