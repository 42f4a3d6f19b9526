"""wrong_dot_not_batched: np.dot for both products.
Expected diagnosis: dot-not-batched
"""

import numpy as np


def attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.dot(weights, V)
