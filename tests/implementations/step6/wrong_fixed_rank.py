"""wrong_fixed_rank: unpacks Q.shape into (n_q, d_k) and uses K.T, so it works only for 2-D input.
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import math

import numpy as np


def masked_attention(Q, K, V, mask):
    n_q, d_k = Q.shape
    scores = np.dot(Q, K.T) / math.sqrt(d_k)
    scores = np.where(mask, scores, -np.inf)
    out = np.zeros((n_q, V.shape[1]))
    for i in range(n_q):
        e = np.exp(scores[i] - scores[i].max())
        out[i] = (e / e.sum()) @ V
    return out
