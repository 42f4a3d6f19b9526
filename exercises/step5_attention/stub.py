"""Step 5: attention. See `attn-practice show step5`."""

import numpy as np

# You may reuse your earlier steps, e.g.:
# from step3_softmax import softmax


def attention(Q, K, V):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V.

    Q: (..., n_q, d_k)   K: (..., n_k, d_k)   V: (..., n_k, d_v)
    ->  (..., n_q, d_v), with d_k = Q.shape[-1] and softmax over the keys.

    Example:
        >>> K = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]])
        >>> V = np.array([[10.0, 0], [0, 5], [2, 2]])
        >>> np.round(attention(np.array([[1.0, 0, 1, 0]]), K, V), 2)
        array([[5.68, 1.55]])
    """
    raise NotImplementedError("step 5: score, scale, softmax over the keys, then mix V")
