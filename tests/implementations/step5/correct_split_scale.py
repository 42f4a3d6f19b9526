"""correct_split_scale: scales Q and K each by d_k ** -0.25 instead of scaling the scores."""

import numpy as np


def attention(Q, K, V):
    Q = np.asarray(Q)
    K = np.asarray(K)
    factor = Q.shape[-1] ** -0.25
    scores = (Q * factor) @ np.swapaxes(K * factor, -1, -2)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - m)
    return (e / np.sum(e, axis=-1, keepdims=True)) @ np.asarray(V)
