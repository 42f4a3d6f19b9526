"""wrong_dot_not_batched__no_scale: np.dot for both products (no batch axes) and no scaling.
Expected diagnosis: dot-not-batched, no-scale
"""

import numpy as np


def attention(Q, K, V):
    scores = np.dot(Q, np.swapaxes(K, -1, -2))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.dot(e / e.sum(axis=-1, keepdims=True), V)
