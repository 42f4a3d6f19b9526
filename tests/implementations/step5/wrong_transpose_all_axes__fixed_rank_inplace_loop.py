"""wrong_transpose_all_axes__fixed_rank_inplace_loop: K.T, and a softmax that normalises row by row in place (each slice of a batch as a whole).
Expected diagnosis: transpose-all-axes, fixed-rank
"""

import numpy as np


def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    for i in range(scores.shape[0]):
        scores[i] = np.exp(scores[i] - np.max(scores[i]))
        scores[i] = scores[i] / np.sum(scores[i])
    return scores @ V
