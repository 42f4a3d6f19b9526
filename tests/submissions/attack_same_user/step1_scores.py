"""Attack: reach past seccomp and Landlock to other processes and files of the same user.

As an ordinary user (no uid drop) these all act on the grader's own
processes and files: cap the fork server's file size (the grader died),
renice or pin it, and chmod / utime / setxattr the sandbox's temporary root,
the grader's root and the Python installation. Every attempt is harmless if
it succeeds (it sets what is already there) but counts as an escape.
"""

import os
import resource

import numpy as np

ESCAPES = []


def attempt(name, fn):
    try:
        fn()
        ESCAPES.append(name)
    except OSError:
        pass


def probe():
    zygote = os.getppid()
    here = os.getcwd()
    tmp_root = os.path.dirname(here)  # this sandbox's private temp root
    grader_root = os.path.dirname(tmp_root)  # the fork server's temp root
    python = os.path.dirname(np.__file__)
    attempt("prlimit(zygote)", lambda: resource.prlimit(zygote, resource.RLIMIT_FSIZE,
                                                        resource.prlimit(zygote, resource.RLIMIT_FSIZE)))
    attempt("prlimit(init)", lambda: resource.prlimit(1, resource.RLIMIT_CORE))
    attempt("setpriority(zygote)", lambda: os.setpriority(os.PRIO_PROCESS, zygote,
                                                          os.getpriority(os.PRIO_PROCESS, zygote)))
    attempt("setpriority(user)", lambda: os.setpriority(os.PRIO_USER, 0, os.getpriority(os.PRIO_USER, 0)))
    attempt("setpriority(group)", lambda: os.setpriority(os.PRIO_PGRP, 0, os.getpriority(os.PRIO_PGRP, 0)))
    attempt("sched_setaffinity(zygote)", lambda: os.sched_setaffinity(zygote, os.sched_getaffinity(0)))
    attempt("sched_setscheduler(zygote)", lambda: os.sched_setscheduler(zygote, os.SCHED_OTHER,
                                                                        os.sched_param(0)))
    attempt("sched_setparam(zygote)", lambda: os.sched_setparam(zygote, os.sched_param(0)))
    for path in (here, tmp_root, grader_root, python, np.__file__):
        try:
            st = os.stat(path)
        except OSError:
            continue
        attempt(f"chmod({path})", lambda p=path, m=st.st_mode: os.chmod(p, m & 0o7777))
        attempt(f"chown({path})", lambda p=path, s=st: os.chown(p, s.st_uid, s.st_gid))
        attempt(f"utime({path})", lambda p=path, s=st: os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns)))
        attempt(f"setxattr({path})", lambda p=path: os.setxattr(p, "user.attn_attack", b"ATTN-ATTACK"))
        attempt(f"removexattr({path})", lambda p=path: os.removexattr(p, "user.attn_attack"))
    fd = os.open(here, os.O_RDONLY)
    try:
        attempt("fchmod(workdir)", lambda: os.fchmod(fd, 0o700))
    finally:
        os.close(fd)


def dot_scores(Q, K):
    if not ESCAPES:
        probe()
    if ESCAPES:
        print("ESCAPED", ESCAPES)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
