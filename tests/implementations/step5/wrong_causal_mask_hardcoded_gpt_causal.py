"""wrong_causal_mask_hardcoded_gpt_causal: a GPT block's causal mask (np.triu, k=1) inside plain attention.
Expected diagnosis: causal-mask-hardcoded
"""

import math

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    T = Q.shape[-2]
    s = Q @ sw(K) / math.sqrt(Q.shape[-1])
    causal = np.triu(np.ones((T, K.shape[-2])), k=1).astype(bool)
    s = np.where(causal, -np.inf, s)
    return sm(s) @ V
