"""Attack: raise the recursion limit and recurse in C (json.dumps of a deeply nested list): a stack overflow."""

import json
import sys

import numpy as np

_nested = []
for _ in range(200_000):
    _nested = [_nested]


def scale_scores(scores, d_k):
    sys.setrecursionlimit(10**8)
    json.dumps(_nested)
    return np.asarray(scores) / np.sqrt(d_k)
