"""Step 4: weighted sum. See `attn-practice show step4`."""

import numpy as np


def weighted_sum(weights, V):
    """Mix the value rows: row i of the output is sum_j weights[i, j] * V[j].

    weights: (..., n_q, n_k)   V: (..., n_k, d_v)   ->   (..., n_q, d_v)

    Example:
        >>> weights = np.array([[0.5, 0.5, 0.0]])
        >>> V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])
        >>> weighted_sum(weights, V)
        array([[5. , 2.5]])
    """
    raise NotImplementedError("step 4: combine the rows of V using the weights")
