"""wrong_causal_mask_hardcoded__no_scale: builds its own causal mask (ignores `mask`) and never scales.
Expected diagnosis: causal-mask-hardcoded, no-scale
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    n_q, n_k = Q.shape[-2], K.shape[-2]
    allowed = np.tril(np.ones((n_q, n_k), dtype=bool))
    s = np.where(allowed, Q @ np.swapaxes(K, -1, -2), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
