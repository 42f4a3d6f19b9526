"""step3, class-based, CS224n style: a layer object whose forward reshapes the row max and sum to (rows, 1); axis is never read."""

import numpy as np


class SoftmaxLayer:
    def __init__(self):
        self.cache = None

    def forward(self, x):
        x = np.array(x, dtype=float)
        if x.ndim == 1:
            x = x - np.max(x)
            out = np.exp(x) / np.sum(np.exp(x))
        else:
            x = x - np.max(x, axis=1).reshape((x.shape[0], 1))
            e = np.exp(x)
            out = e / np.sum(e, axis=1).reshape((x.shape[0], 1))
        self.cache = out
        return out


def softmax(x, axis=-1):
    return SoftmaxLayer().forward(x)
