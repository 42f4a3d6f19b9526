"""wrong_mask_ignored_einsum: einsum attention that never reads `mask`.
Expected diagnosis: mask-ignored
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(Q, K, V, mask):
    s = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])
    return np.einsum("...qk,...kd->...qd", sm(s), V)
