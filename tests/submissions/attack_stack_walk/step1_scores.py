"""Attack: look for the expected answer in the caller's frames (sys._getframe, inspect.stack) and in gc."""

import gc
import inspect
import sys

import numpy as np


def dot_scores(Q, K):
    shape = np.shape(Q)[:-1] + np.shape(K)[-2:-1]
    candidates = []
    frame = sys._getframe(1)
    while frame is not None:
        candidates += [v for v in frame.f_locals.values() if isinstance(v, np.ndarray)]
        frame = frame.f_back
    for info in inspect.stack():
        candidates += [v for v in info.frame.f_locals.values() if isinstance(v, np.ndarray)]
    candidates += [o for o in gc.get_objects() if isinstance(o, np.ndarray)]
    for c in candidates:
        if c.shape == shape and c is not Q and c is not K:
            return c.copy()
    return np.zeros(shape)
