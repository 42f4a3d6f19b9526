"""wrong_transpose_all_axes__causal_mask_hardcoded__fixed_rank_gpt_kt_shape0: K.T and a causal mask sized from Q.shape[0].
Expected diagnosis: transpose-all-axes, causal-mask-hardcoded, fixed-rank
"""

import numpy as np


def sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    T = Q.shape[0]
    s = Q @ K.T / np.sqrt(K.shape[-1])
    s = s + np.triu(np.full((T, T), -np.inf), k=1)
    return sm(s) @ V
