"""wrong_other_rolled_keys: head h scores its queries against head h+1's keys.
Expected diagnosis: none
"""

import math

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    outs = []
    for h in range(n_heads):
        g = (h + 1) % n_heads
        q = Q[..., h*d:(h+1)*d]; k = K[..., g*d:(g+1)*d]; v = V[..., h*d:(h+1)*d]
        outs.append(sm(q @ sw(k) / math.sqrt(d)) @ v)
    return np.concatenate(outs, -1) @ W_o
