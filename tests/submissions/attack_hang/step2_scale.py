"""Attack: sleep for hours inside the function."""

import time

import numpy as np


def scale_scores(scores, d_k):
    time.sleep(100_000)
