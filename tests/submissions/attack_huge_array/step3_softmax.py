"""Attack: return a 10-million-element Python list."""

import numpy as np


def softmax(x, axis=-1):
    return [0.0] * 10_000_000
