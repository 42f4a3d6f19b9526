"""wrong_scale_by_dk: divides the scores by d_k instead of sqrt(d_k).
Expected diagnosis: scale-by-dk
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
