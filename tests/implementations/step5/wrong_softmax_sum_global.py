"""wrong_softmax_sum_global: shifts each row by its own max, then divides by the sum of every weight (the bug the last report called fixed-rank).
Expected diagnosis: softmax-sum-global
"""

import numpy as np


def attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum()) @ V
