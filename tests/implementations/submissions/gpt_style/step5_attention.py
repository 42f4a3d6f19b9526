"""A GPT-style attention: the block's causal mask came along (additive, (T, T) from the queries)."""

import math

import numpy as np


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V):
    T = Q.shape[-2]
    att = Q @ np.swapaxes(K, -1, -2) * (1.0 / math.sqrt(K.shape[-1]))
    att = att + np.triu(np.full((T, T), -1e9), k=1)
    return softmax(att) @ V
