"""wrong_wrong_scale: takes d_k from Q.shape[-2], so it scales by sqrt(n_q).
Expected diagnosis: wrong-scale
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    d_k = Q.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
