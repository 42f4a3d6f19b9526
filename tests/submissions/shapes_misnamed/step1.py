import numpy as np


def dot_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)
