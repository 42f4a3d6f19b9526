"""step1, list-returning: K.T, then .tolist()."""

import numpy as np


def dot_scores(Q, K):
    return (np.asarray(Q) @ np.asarray(K).T).tolist()
