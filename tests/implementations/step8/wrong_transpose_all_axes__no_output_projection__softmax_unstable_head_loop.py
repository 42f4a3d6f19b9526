"""wrong_transpose_all_axes__no_output_projection__softmax_unstable_head_loop: k.T, no max subtraction and no W_o.
Expected diagnosis: transpose-all-axes, no-output-projection, softmax-unstable
"""

import math

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    d = Z.shape[-1] // n_heads
    outs = []
    for h in range(n_heads):
        q = (Z @ W_q)[..., h*d:(h+1)*d]; k = (Z @ W_k)[..., h*d:(h+1)*d]; v = (Z @ W_v)[..., h*d:(h+1)*d]
        e = np.exp(q @ k.T / math.sqrt(d))
        outs.append(e / e.sum(-1, keepdims=True) @ v)
    return np.concatenate(outs, -1)
