"""wrong_other_returns_none: computes the result and never returns it.
Expected diagnosis: none
"""

import numpy as np


def weighted_sum(weights, V):
    out = np.asarray(weights) @ np.asarray(V)  # noqa: F841
