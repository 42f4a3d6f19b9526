"""wrong_transpose_all_axes__scale_by_dk: K.T (reverses every axis) and divides by d_k.
Expected diagnosis: transpose-all-axes, scale-by-dk
"""

import numpy as np


def attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.T / d_k
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return w @ V
