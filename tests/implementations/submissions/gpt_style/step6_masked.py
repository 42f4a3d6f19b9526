"""einsum attention whose `mask` argument is never read."""

import numpy as np


def masked_attention(Q, K, V, mask):
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", weights, V)
