"""wrong_other_returns_none: prints the scaled scores instead of returning them.
Expected diagnosis: none
"""

import numpy as np


def scale_scores(scores, d_k):
    scaled = np.asarray(scores) / np.sqrt(d_k)
    print(scaled)
