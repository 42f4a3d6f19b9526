"""Attack: return a 3-million-element Python list."""

import numpy as np


def softmax(x, axis=-1):
    return [0.0] * 3_000_000
