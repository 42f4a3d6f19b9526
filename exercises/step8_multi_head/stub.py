"""Step 8 (bonus): multi-head attention. See `attn-practice show step8`."""

import numpy as np

# You may reuse your earlier steps, e.g.:
# from step5_attention import attention


def multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads):
    """n_heads attentions over column blocks of the projections, then W_o.

    Z: (..., n, d_model)   W_q, W_k, W_v, W_o: (d_model, d_model)
    d_h = d_model // n_heads; head h uses columns h*d_h:(h+1)*d_h of
    Z @ W_q, Z @ W_k, Z @ W_v and is scaled by sqrt(d_h).
    Heads are concatenated in order, then multiplied by W_o -> (..., n, d_model)

    Example:
        >>> Z, I = np.ones((2, 3, 4)), np.eye(4)
        >>> multi_head_attention(Z, I, I, I, I, n_heads=2).shape
        (2, 3, 4)
    """
    raise NotImplementedError("step 8: split the projections into heads, attend, concatenate, apply W_o")
