"""wrong_causal_mask_hardcoded_additive: an additive -1e9 causal mask in place of `mask`.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    n = Q.shape[-2]; m = K.shape[-2]
    s = Q @ sw(K) / np.sqrt(Q.shape[-1])
    s = s + np.triu(np.ones((n, m)), k=1) * -1e9
    return sm(s) @ V
