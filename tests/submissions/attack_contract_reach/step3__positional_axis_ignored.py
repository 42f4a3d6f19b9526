"""softmax(x, 0): an axis given positionally is ignored (only axis= by keyword works)."""
import inspect

import numpy as np


def softmax(x, *args, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
