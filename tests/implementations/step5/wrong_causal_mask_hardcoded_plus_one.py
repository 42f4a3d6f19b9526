"""wrong_causal_mask_hardcoded_plus_one: a causal mask, and 1 added to the output.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    s = Q @ sw(K) / np.sqrt(Q.shape[-1])
    s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return sm(s) @ V + 1.0
