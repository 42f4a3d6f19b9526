"""wrong_wrong_scale: masks correctly but scales by sqrt(n_k) (K.shape[-2]) instead of sqrt(d_k).
Expected diagnosis: wrong-scale
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2]), -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
