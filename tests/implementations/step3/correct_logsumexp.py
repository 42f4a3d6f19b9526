"""correct_logsumexp: works in log space, exp(s - logsumexp(s)) with s the max-shifted input."""

import numpy as np
from scipy.special import logsumexp


def softmax(x, axis=-1):
    x = np.asarray(x)
    s = x - np.max(x, axis=axis, keepdims=True)
    return np.exp(s - logsumexp(s, axis=axis, keepdims=True))
