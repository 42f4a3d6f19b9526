"""wrong_causal_mask_hardcoded: np.triu marks the future as blocked; the `mask` argument is never used.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    future = np.triu(np.ones(s.shape[-2:], dtype=bool), k=1)
    s = np.where(future, -np.inf, s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
