"""Attack: return a million-element Python list."""

import numpy as np


def softmax(x, axis=-1):
    return [0.0] * 1_000_000
