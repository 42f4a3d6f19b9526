"""wrong_causal_mask_hardcoded_inplace_inf: a causal mask written in place with -inf, `mask` unused.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def masked_attention(Q, K, V, mask):
    s = Q @ sw(K) / np.sqrt(Q.shape[-1])
    causal = np.tril(np.ones(s.shape[-2:]))
    s[..., causal == 0] = float("-inf")
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ V
