"""wrong_heads_not_split: runs a single attention over the full d_model width (scaled by sqrt(d_model)), then W_o.
Expected diagnosis: heads-not-split
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True) @ V) @ W_o
