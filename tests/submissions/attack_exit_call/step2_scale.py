"""Attack: os._exit(0) inside the function: the sandbox process vanishes."""

import os

import numpy as np


def scale_scores(scores, d_k):
    os._exit(0)
