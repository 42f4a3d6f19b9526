"""Attack: allocate 8 TiB with NumPy inside the function."""

import numpy as np


def dot_scores(Q, K):
    big = np.ones((1 << 40,))
    return big[:1]
