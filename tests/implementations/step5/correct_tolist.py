"""correct_tolist: right values returned as nested Python lists."""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.moveaxis(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True) @ V).tolist()
