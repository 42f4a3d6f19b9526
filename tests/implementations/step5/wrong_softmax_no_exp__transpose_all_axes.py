"""wrong_softmax_no_exp__transpose_all_axes: K.T, and the weights are the scores over their sum (no exp).
Expected diagnosis: transpose-all-axes, softmax-no-exp
"""

import numpy as np


def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    weights = scores / np.sum(scores, axis=-1, keepdims=True)
    return weights @ V
