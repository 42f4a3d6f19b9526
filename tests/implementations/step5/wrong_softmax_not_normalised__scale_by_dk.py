"""wrong_softmax_not_normalised__scale_by_dk: divides by d_k, exponentiates (shifted) and never normalises.
Expected diagnosis: scale-by-dk, softmax-not-normalised
"""

import numpy as np


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    return np.exp(s - s.max(axis=-1, keepdims=True)) @ V
