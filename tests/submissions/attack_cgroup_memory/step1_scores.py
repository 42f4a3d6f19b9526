"""Attack: hold more memory than the sandbox's limit by spreading it over child processes.

RLIMIT_AS bounds each process on its own; four children holding 100 MiB of
shared (memfd-like, MAP_SHARED anonymous) memory each hold 400 MiB against
the 256 MiB the tests allow. Each child reports once its memory is touched
and keeps it until released; those still alive when released held it at one time.
"""

import mmap
import os

import numpy as np

CHILD_BYTES = 100 * 1024 * 1024
LIMIT = 256 * 1024 * 1024  # test_attacks.LIMITS.memory


def _hold_in_children(n=4):
    release_r, release_w = os.pipe()
    reported = set()
    for _ in range(n):
        report_r, report_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            os.close(release_w)
            try:
                m = mmap.mmap(-1, CHILD_BYTES, flags=mmap.MAP_SHARED)
                for i in range(0, CHILD_BYTES, mmap.PAGESIZE):
                    m[i] = 1
                os.write(report_w, b"1")
                os.read(release_r, 1)  # until the parent lets go
            finally:
                os._exit(0)
        os.close(report_w)
        if os.read(report_r, 1) == b"1":
            reported.add(pid)
        os.close(report_r)
    # Everyone who reported and is still alive now held its memory at the same time.
    os.close(release_w)
    os.close(release_r)
    held = 0
    for _ in range(n):
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid in reported and os.WIFEXITED(status):
            held += CHILD_BYTES
    return held


HELD = _hold_in_children()


def dot_scores(Q, K):
    if HELD > LIMIT:
        print(f"ESCAPED: held {HELD >> 20} MiB in child processes")
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
