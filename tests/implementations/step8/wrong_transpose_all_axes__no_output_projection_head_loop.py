"""wrong_transpose_all_axes__no_output_projection_head_loop: a head loop with k.T and no W_o.
Expected diagnosis: transpose-all-axes, no-output-projection
"""

import math

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d = Z.shape[-1] // n_heads
    outs = []
    for h in range(n_heads):
        q = (Z @ W_q)[..., h*d:(h+1)*d]; k = (Z @ W_k)[..., h*d:(h+1)*d]; v = (Z @ W_v)[..., h*d:(h+1)*d]
        outs.append(sm(q @ k.T / math.sqrt(d)) @ v)
    return np.concatenate(outs, -1)
