"""correct_tolist: right values, returned as nested Python lists."""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    s = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ V).tolist()
