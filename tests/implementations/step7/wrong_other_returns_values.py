"""wrong_other_returns_values: returns the value projection Z @ W_v and skips the attention.
Expected diagnosis: none
"""

import numpy as np


def self_attention(Z, W_q, W_k, W_v):
    return np.asarray(Z) @ np.asarray(W_v)
