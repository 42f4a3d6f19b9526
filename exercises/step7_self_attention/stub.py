"""Step 7 (bonus): self-attention. See `attn-practice show step7`."""

import numpy as np

# You may reuse your earlier steps, e.g.:
# from step5_attention import attention


def self_attention(Z, W_q, W_k, W_v):
    """Attention where Q, K and V are all projected from the same sequence Z.

    Z: (..., n, d_model)   W_q, W_k: (d_model, d_k)   W_v: (d_model, d_v)
    ->  attention(Z @ W_q, Z @ W_k, Z @ W_v), shape (..., n, d_v)

    Example:
        >>> Z = np.ones((3, 4))
        >>> self_attention(Z, np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 5))).shape
        (3, 5)
    """
    raise NotImplementedError("step 7: project Z into Q, K and V, then attend")
