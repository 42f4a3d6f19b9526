"""wrong_elementwise_product: multiplies weights and V elementwise instead of a matrix product.
Expected diagnosis: elementwise-product
"""

import numpy as np


def weighted_sum(weights, V):
    return np.asarray(weights) * np.asarray(V)
