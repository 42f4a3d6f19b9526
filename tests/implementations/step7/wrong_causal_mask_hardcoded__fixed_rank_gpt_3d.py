"""wrong_causal_mask_hardcoded__fixed_rank_gpt_3d: B, T, C = Z.shape with an additive triu -inf mask.
Expected diagnosis: causal-mask-hardcoded, fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Z, W_q, W_k, W_v):
    B, T, C = Z.shape
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(K.shape[2])
    s = s + np.triu(np.full((T, T), -np.inf), 1)[None]
    return sm(s) @ V
