"""wrong_causal_mask_hardcoded_sliding_window: a sliding-window mask (each query sees itself and the key before).
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
    n_q, n_k = s.shape[-2:]
    i = np.arange(n_q)[:, None]; j = np.arange(n_k)[None, :]
    s = np.where((j <= i) & (j >= i - 1), s, -np.inf)
    return sm(s) @ V
