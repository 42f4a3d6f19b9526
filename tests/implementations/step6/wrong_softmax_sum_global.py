"""wrong_softmax_sum_global: masked softmax shifted by each row's max and divided by the sum of all the weights.
Expected diagnosis: softmax-sum-global
"""

import numpy as np


def masked_attention(Q, K, V, mask):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e) @ V
