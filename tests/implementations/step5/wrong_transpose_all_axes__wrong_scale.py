"""wrong_transpose_all_axes__wrong_scale: K.T, and divides by 8 (a fixed number) instead of sqrt(d_k).
Expected diagnosis: transpose-all-axes, wrong-scale
"""

import numpy as np


def attention(Q, K, V):
    scores = (Q @ K.T) / 8.0
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights = weights / weights.sum(-1, keepdims=True)
    return weights @ V
