"""wrong_other_hardmax: returns a one-hot of the argmax along `axis` instead of soft weights.
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros(x.shape)
    np.put_along_axis(out, idx, 1.0, axis=axis)
    return out
