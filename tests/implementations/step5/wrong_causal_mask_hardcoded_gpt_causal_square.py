"""wrong_causal_mask_hardcoded_gpt_causal_square: a GPT block's additive causal mask built (T, T) from n_q.
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
    s = s + np.triu(np.full((T, T), -1e9), k=1)   # square only
    return sm(s) @ V
