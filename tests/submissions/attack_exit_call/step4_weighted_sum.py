"""Attack: raise KeyboardInterrupt inside the function."""

import numpy as np


def weighted_sum(weights, V):
    raise KeyboardInterrupt
