"""wrong_softmax_unstable__ignores_axis: no max subtraction, and always the last axis (loops over rows).
Expected diagnosis: softmax-unstable, ignores-axis
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for i, row in enumerate(flat):
        e = np.exp(row)
        out[i] = e / e.sum()
    return out.reshape(x.shape)
