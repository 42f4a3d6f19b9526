"""correct_einsum_broadcast: einsum products and an explicitly broadcast mask applied by boolean assignment."""

import numpy as np


def masked_attention(Q, K, V, mask):
    d_k = np.shape(Q)[-1]
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)
    blocked = ~np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    scores[blocked] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", w, V)
