"""wrong_causal_mask_hardcoded_gpt_block: self-attention with np.tril causal masking and a -1e9 fill.
Expected diagnosis: causal-mask-hardcoded
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    T = Z.shape[-2]
    s = Q @ sw(K) / np.sqrt(K.shape[-1])
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -1e9)
    return sm(s) @ V
