"""wrong_other_no_softmax: multiplies the scaled scores straight into V, with no softmax at all.
Expected diagnosis: none
"""

import numpy as np


def attention(Q, K, V):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return scores @ V
