"""Attack: right only when called from a batch of calls, found by walking the stack.

Recorded examples used to arrive as one `call_many` batch and fresh ones one
by one, so this passed with a warm example store and failed with a cold one.
"""

import sys

import numpy as np


def _in_batch():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "call_many":
            return True
        frame = frame.f_back
    return False


def dot_scores(Q, K):
    out = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
    return out if _in_batch() else out + 1.0
