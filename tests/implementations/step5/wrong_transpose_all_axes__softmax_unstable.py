"""wrong_transpose_all_axes__softmax_unstable: K.T and exp of the raw scores.
Expected diagnosis: transpose-all-axes, softmax-unstable
"""

import numpy as np


def attention(Q, K, V):
    scores = np.matmul(Q, K.T) / np.sqrt(K.shape[-1])
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    return np.matmul(weights, V)
