"""Step 2: scale. See `attn-practice show step2`."""

import numpy as np


def scale_scores(scores, d_k):
    """Divide the scores by sqrt(d_k) so their spread doesn't grow with d_k.

    scores: any shape (in attention: (..., n_q, n_k))   d_k: positive int
    Returns an array of the same shape as `scores`.

    Example:
        >>> scale_scores(np.array([2.0, 0.0, 1.0]), 4)
        array([1. , 0. , 0.5])
    """
    raise NotImplementedError("step 2: divide the scores by the square root of d_k")
