"""wrong_other_mask_not_broadcast: boolean-indexes the scores with the mask as given, so a 2-D mask with batched Q/K/V fails.
Expected diagnosis: none
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores[~np.asarray(mask, dtype=bool)] = -np.inf
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
