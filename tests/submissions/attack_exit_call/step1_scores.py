"""Attack: sys.exit(0) inside the function."""

import sys

import numpy as np


def dot_scores(Q, K):
    sys.exit(0)
