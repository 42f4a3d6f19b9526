"""wrong_scores_transposed__no_scale: K Q^T, not scaled.
Expected diagnosis: scores-transposed, no-scale
"""

import numpy as np


def attention(Q, K, V):
    scores = K @ np.swapaxes(Q, -1, -2)
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / np.sum(weights, axis=-1, keepdims=True)
    return weights @ V
