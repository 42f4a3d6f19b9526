"""Attack: a 64 GiB bytes object inside the function."""

import numpy as np


def softmax(x, axis=-1):
    junk = b"x" * (1 << 36)
    return junk
