"""wrong_transpose_all_axes__mask_inverted: K.T, and the mask used the wrong way round.
Expected diagnosis: transpose-all-axes, mask-inverted
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    scores = np.where(mask, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True) @ V
