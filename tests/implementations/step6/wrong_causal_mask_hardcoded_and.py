"""wrong_causal_mask_hardcoded_and: `mask` combined with a causal mask of its own.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    s = Q @ sw(K) / np.sqrt(Q.shape[-1])
    T = s.shape[-1]
    s = np.where(mask & np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return sm(s) @ V
