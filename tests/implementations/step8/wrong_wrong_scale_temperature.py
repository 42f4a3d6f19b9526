"""wrong_wrong_scale_temperature: each head divided by a constant 4.0.
Expected diagnosis: wrong-scale
"""

import numpy as np


def sw(a):
    return np.swapaxes(a, -1, -2)


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    outs = []
    d = Z.shape[-1] // n_heads
    for h in range(n_heads):
        q = (Z @ W_q)[..., h*d:(h+1)*d]; k = (Z @ W_k)[..., h*d:(h+1)*d]; v = (Z @ W_v)[..., h*d:(h+1)*d]
        outs.append(sm(q @ sw(k) / 4.0) @ v)
    return np.concatenate(outs, -1) @ W_o
