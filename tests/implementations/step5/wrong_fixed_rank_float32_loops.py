"""wrong_fixed_rank_float32_loops: casts to float32 and normalises row by row in a loop over a 2-D array, with K.T.
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import numpy as np


def softmax_2d(x):
    n, m = x.shape
    out = np.empty((n, m), dtype=np.float32)
    for i in range(n):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def attention(Q, K, V):
    Q = Q.astype(np.float32)
    K = K.astype(np.float32)
    V = V.astype(np.float32)
    scores = (Q @ K.T) / np.sqrt(np.float32(Q.shape[1]))
    return softmax_2d(scores) @ V
