"""Attack: return an object whose __array__ raises, loops or returns an object array."""

import numpy as np


class Boom:
    def __array__(self, dtype=None, copy=None):
        raise SystemExit("ATTN-ATTACK")

    def __repr__(self):
        raise RuntimeError("no repr either")


def softmax(x, axis=-1):
    return Boom()
