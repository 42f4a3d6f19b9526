"""wrong_transpose_all_axes__fixed_rank_reshape: Q @ K.T and a CS224n-style softmax (max and sum reshaped with reshape(-1, 1)) that only works on a matrix.
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import numpy as np


def stable_softmax(x):
    x = x - np.max(x, axis=1).reshape(-1, 1)
    e = np.exp(x)
    return e / np.sum(e, axis=1).reshape(-1, 1)


def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    return stable_softmax(scores) @ V
