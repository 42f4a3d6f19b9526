"""Attack: read stdin (input() and sys.stdin.read()) inside the function."""

import os
import sys

import numpy as np

os.read(0, 100)
sys.stdin.read()


def weighted_sum(weights, V):
    line = input("weights? ")
    return np.asarray(weights) @ np.asarray(V) + float(line)
