"""A correct answer returned as a lying ndarray subclass: judged as the plain array it holds."""

import numpy as np


class Liar(np.ndarray):
    def __eq__(self, other):
        return np.zeros(np.shape(self), dtype=bool)


def weighted_sum(weights, V):
    return (np.asarray(weights) @ np.asarray(V)).view(Liar)
