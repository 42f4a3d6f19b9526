"""wrong_other_clips: avoids overflow by clipping x to [-500, 500] instead of subtracting the max.
Expected diagnosis: none
"""

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(np.clip(np.asarray(x), -500, 500))
    return e / np.sum(e, axis=axis, keepdims=True)
