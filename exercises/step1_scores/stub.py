"""Step 1: scores. See `attn-practice show step1`."""

import numpy as np


def dot_scores(Q, K):
    """Score every query against every key with a dot product.

    Q: (..., n_q, d_k)   K: (..., n_k, d_k)   ->   (..., n_q, n_k)
    Entry [..., i, j] is Q[..., i, :] . K[..., j, :]; `...` are batch axes.

    Example:
        >>> Q = np.array([[1.0, 0.0, 1.0, 0.0]])
        >>> K = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]])
        >>> dot_scores(Q, K)
        array([[2., 0., 1.]])
    """
    raise NotImplementedError("step 1: compute the dot product of every query with every key")
