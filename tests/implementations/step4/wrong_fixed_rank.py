"""wrong_fixed_rank: a hard-coded 3-D einsum ("bqk,bkd->bqd"), so it works only for exactly one batch axis.
Expected diagnosis: fixed-rank
"""

import numpy as np


def weighted_sum(weights, V):
    return np.einsum("bqk,bkd->bqd", weights, V)
