"""Step 3: softmax. See `attn-practice show step3`."""

import numpy as np


def softmax(x, axis=-1):
    """Exponentiate and normalise x along `axis`, stably.

    x: any shape, at least 1-D   ->   same shape; each slice along `axis`
    is >= 0 and sums to 1. Must not overflow for huge inputs (subtract the
    max first), and -inf entries must get weight exactly 0.

    Example:
        >>> np.round(softmax(np.array([1.0, 0.0, 0.5])), 3)
        array([0.506, 0.186, 0.307])
        >>> softmax(np.array([[1000.0, 1000.0]]), axis=1)
        array([[0.5, 0.5]])
    """
    raise NotImplementedError("step 3: subtract the max, exponentiate, normalise along axis")
