"""wrong_other_cosine: returns cosine similarities (rows normalised to unit length), not raw dot products.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    Qn = Q / np.linalg.norm(Q, axis=-1, keepdims=True)
    Kn = K / np.linalg.norm(K, axis=-1, keepdims=True)
    return Qn @ np.swapaxes(Kn, -1, -2)
