"""Attack: right only inside a batch of calls, found by walking the stack."""

import sys

import numpy as np


def _in_batch():
    frame = sys._getframe(1)
    while frame is not None:
        calls = frame.f_locals.get("calls")
        if frame.f_code.co_name == "call_many" and isinstance(calls, list) and len(calls) > 1:
            return True
        frame = frame.f_back
    return False


def dot_scores(Q, K):
    out = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
    return out if _in_batch() else out + 1.0
