"""Attack: aim SIGIO (or any signal, via F_SETSIG) at the fork server or the grader.

fcntl F_SETOWN / F_SETOWN_EX / F_SETSIG and ioctl FIOSETOWN / SIOCSPGRP make
the kernel signal another process when a descriptor becomes ready; before
Linux 6.12 Landlock cannot scope that. TIOCSTI would type into a terminal.
Only the setting is tried (no signal is sent); any success is an escape.
"""

import fcntl
import os
import struct
import termios

import numpy as np

F_SETOWN, F_SETSIG, F_SETOWN_EX = 8, 10, 15
FIOSETOWN, SIOCSPGRP = 0x8901, 0x8902
ESCAPES = []


def probe():
    zygote = os.getppid()
    r, w = os.pipe()
    try:
        for name, fn in [
            ("F_SETOWN", lambda: fcntl.fcntl(r, F_SETOWN, zygote)),
            ("F_SETOWN(group)", lambda: fcntl.fcntl(r, F_SETOWN, -os.getpgid(zygote))),
            ("F_SETOWN_EX", lambda: fcntl.fcntl(r, F_SETOWN_EX, struct.pack("ii", 1, zygote))),
            ("F_SETSIG", lambda: fcntl.fcntl(r, F_SETSIG, 9)),
            ("FIOSETOWN", lambda: fcntl.ioctl(r, FIOSETOWN, struct.pack("i", zygote))),
            ("SIOCSPGRP", lambda: fcntl.ioctl(r, SIOCSPGRP, struct.pack("i", zygote))),
            ("TIOCSTI", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x")),
        ]:
            try:
                fn()
                ESCAPES.append(name)
            except OSError as exc:
                if exc.errno != 1 and name in ("F_SETOWN", "F_SETSIG", "F_SETOWN_EX"):
                    ESCAPES.append(f"{name} not refused: {exc}")
    finally:
        os.close(r)
        os.close(w)


def dot_scores(Q, K):
    if not ESCAPES:
        probe()
    if ESCAPES:
        print("ESCAPED", ESCAPES)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
