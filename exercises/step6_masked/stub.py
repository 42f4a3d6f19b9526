"""Step 6 (bonus): masked attention. See `attn-practice show step6`."""

import numpy as np

# You may reuse your earlier steps, e.g.:
# from step3_softmax import softmax


def masked_attention(Q, K, V, mask):
    """Attention where query i may only attend to keys j with mask[..., i, j] True.

    Q: (..., n_q, d_k)   K: (..., n_k, d_k)   V: (..., n_k, d_v)
    mask: bool, (n_q, n_k) or (..., n_q, n_k)   ->   (..., n_q, d_v)
    Blocked pairs get weight exactly 0; each row's weights still sum to 1.

    Example:
        >>> K = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]])
        >>> V = np.array([[10.0, 0], [0, 5], [2, 2]])
        >>> mask = np.array([[False, True, True]])
        >>> np.round(masked_attention(np.array([[1.0, 0, 1, 0]]), K, V, mask), 3)
        array([[1.245, 3.133]])
    """
    raise NotImplementedError("step 6: set blocked scores to -inf before the softmax")
