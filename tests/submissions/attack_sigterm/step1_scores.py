"""Attack: ignore SIGTERM/SIGINT/SIGHUP, leave a SIGTERM-proof child behind, and loop forever."""

import os
import signal
import time

import numpy as np

for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, signal.SIG_IGN)
try:
    if os.fork() == 0:
        os.setsid()
        while True:
            time.sleep(1)
except OSError:
    pass


def dot_scores(Q, K):
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
