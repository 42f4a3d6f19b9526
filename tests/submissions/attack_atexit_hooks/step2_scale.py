"""Correct, with atexit handlers that exit with an error code."""

import atexit
import os

import numpy as np

atexit.register(os._exit, 3)


def scale_scores(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)
