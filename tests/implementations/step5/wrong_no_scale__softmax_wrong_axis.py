"""wrong_no_scale__softmax_wrong_axis: no scaling, and the softmax runs over the queries axis.
Expected diagnosis: no-scale, softmax-wrong-axis
"""

import numpy as np


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    return (e / e.sum(axis=-2, keepdims=True)) @ V
