"""wrong_other_returns_none: computes the scores but forgets the return statement.
Expected diagnosis: none
"""

import numpy as np


def dot_scores(Q, K):
    scores = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)  # noqa: F841
