"""wrong_elementwise_product: multiplies Q and K elementwise instead of taking dot products.
Expected diagnosis: elementwise-product
"""

import numpy as np


def dot_scores(Q, K):
    return np.asarray(Q) * np.asarray(K)
