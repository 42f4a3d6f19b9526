"""correct_math_sqrt: divides by math.sqrt(d_k), a Python float, so float32 input stays float32."""

import math

import numpy as np


def scale_scores(scores, d_k):
    return np.asarray(scores) / math.sqrt(d_k)
