"""wrong_transpose_all_axes__no_scale__causal_mask_hardcoded_gpt_block: K.T, no scaling and a causal mask: three at once.
Expected diagnosis: transpose-all-axes, no-scale, causal-mask-hardcoded
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    T = Z.shape[0]
    s = Q @ K.T
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    return sm(s) @ V
