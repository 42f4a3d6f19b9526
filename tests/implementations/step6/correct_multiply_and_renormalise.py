"""correct_multiply_and_renormalise: shifts by the max over allowed keys, zeroes blocked exps by multiplying with the mask, renormalises."""

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    m = np.max(np.where(mask, scores, -np.inf), axis=-1, keepdims=True)
    e = np.exp(np.where(mask, scores - m, 0.0)) * mask
    return (e / e.sum(axis=-1, keepdims=True)) @ V
