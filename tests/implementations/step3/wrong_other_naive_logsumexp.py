"""wrong_other_naive_logsumexp: exp(x - logsumexp(x)) with logsumexp = m + log(sum(exp(x - m))): finite, but [1e300, 1e300] gives [1, 1].
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)
