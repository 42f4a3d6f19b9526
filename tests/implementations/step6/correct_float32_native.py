"""correct_float32_native: keeps all intermediates in the input dtype (float32 stays float32)."""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    dtype = np.result_type(Q, K, V)
    scores = (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(dtype.type(Q.shape[-1]))
    scores = np.where(mask, scores, dtype.type(-np.inf)).astype(dtype)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ V).astype(dtype)
