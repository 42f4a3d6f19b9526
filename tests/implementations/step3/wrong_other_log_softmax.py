"""wrong_other_log_softmax: returns log-probabilities x - logsumexp(x) instead of probabilities.
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return x - lse
