"""correct_additive_mask: adds a bias of 0 (allowed) or -inf (blocked) to the scores."""

import math

import numpy as np


def masked_attention(Q, K, V, mask):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    bias = np.where(np.asarray(mask, dtype=bool), 0.0, -np.inf)
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(Q.shape[-1]) + bias
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    w = np.exp(scores)
    return np.matmul(w / np.sum(w, axis=-1, keepdims=True), V)
