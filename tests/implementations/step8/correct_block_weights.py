"""correct_block_weights: slices the weight matrices per head and sums head_h @ W_o[rows of h] instead of concatenating."""

import math

import numpy as np


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    W_q, W_k, W_v, W_o = (np.asarray(W) for W in (W_q, W_k, W_v, W_o))
    d_h = Z.shape[-1] // n_heads
    out = 0.0
    for h in range(n_heads):
        block = slice(h * d_h, (h + 1) * d_h)
        q, k, v = Z @ W_q[:, block], Z @ W_k[:, block], Z @ W_v[:, block]
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_h)
        e = np.exp(s - np.max(s, axis=-1, keepdims=True))
        head = (e / np.sum(e, axis=-1, keepdims=True)) @ v
        out = out + head @ W_o[block, :]
    return out
