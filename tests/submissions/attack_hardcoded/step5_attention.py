"""Attack: hard-code the lesson's worked example output (~[5.68, 1.55])."""

import numpy as np


def attention(Q, K, V):
    return np.array([[5.6770, 1.5500]]) if np.shape(Q) == (1, 4) else np.zeros(np.shape(Q)[:-1] + np.shape(V)[-1:])
