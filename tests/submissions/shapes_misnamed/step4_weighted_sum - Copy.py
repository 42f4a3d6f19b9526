import numpy as np


def weighted_sum(weights, V):
    return weights @ V
