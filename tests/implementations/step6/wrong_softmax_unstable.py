"""wrong_softmax_unstable: masks with -inf but exponentiates without subtracting the max, so large scores give NaN.
Expected diagnosis: softmax-unstable
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), -np.inf)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True) @ V
