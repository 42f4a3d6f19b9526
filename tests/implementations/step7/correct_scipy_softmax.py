"""correct_scipy_softmax: projections with np.matmul broadcasting and scipy.special.softmax for the weights."""

import numpy as np
from scipy.special import softmax


def self_attention(Z, W_q, W_k, W_v):
    Q = np.matmul(Z, W_q)
    K = np.matmul(Z, W_k)
    V = np.matmul(Z, W_v)
    weights = softmax(np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1]), axis=-1)
    return np.matmul(weights, V)
