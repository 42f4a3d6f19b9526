"""wrong_heads_not_split__softmax_unstable: one attention over the full width, exp without a shift.
Expected diagnosis: heads-not-split, softmax-unstable
"""

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    e = np.exp(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return (e / e.sum(axis=-1, keepdims=True) @ V) @ W_o
