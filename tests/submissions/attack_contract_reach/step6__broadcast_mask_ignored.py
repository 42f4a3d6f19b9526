"""A mask that broadcasts with size-1 axes, such as (1, n_q, n_k), is ignored."""
import numpy as np


def masked_attention(Q, K, V, mask):
    mask = np.asarray(mask, dtype=bool)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask.ndim == 2 or mask.shape[:-2] == s.shape[:-2]:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V
