"""wrong_other_returns_none: computes the softmax into a local name and never returns it.
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    result = e / np.sum(e, axis=axis, keepdims=True)  # noqa: F841
