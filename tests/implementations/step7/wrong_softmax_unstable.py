"""wrong_softmax_unstable: exponentiates the scaled scores without subtracting the max, so large inputs give NaN.
Expected diagnosis: softmax-unstable
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    e = np.exp(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return e / e.sum(axis=-1, keepdims=True) @ V
