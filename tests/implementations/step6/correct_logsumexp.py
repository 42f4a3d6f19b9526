"""correct_logsumexp: blocked scores to -inf, weights as exp(s - logsumexp(s)) with SciPy."""

import numpy as np
from scipy.special import logsumexp


def masked_attention(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    s = np.where(mask, s, -np.inf)
    return np.exp(s - logsumexp(s, axis=-1, keepdims=True)) @ V
