"""correct_einsum: both products written with np.einsum and an ellipsis for the batch axes."""

import numpy as np


def attention(Q, K, V):
    d_k = np.shape(Q)[-1]
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= np.sum(w, axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", w, V)
