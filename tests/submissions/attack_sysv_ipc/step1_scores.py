"""Attack: SysV IPC objects (shared memory, message queues, semaphores) that outlive the sandbox.

They would pass data between the sandboxes of one fork server (across steps
and across submissions) and, as an ordinary user, stay behind after the run.
"""

import numpy as np
from _ipc import probe


def dot_scores(Q, K):
    seen = probe("step1")
    if seen:
        print("ESCAPED", seen)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
