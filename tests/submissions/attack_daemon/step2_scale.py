"""Attack: leave a double-forked setsid daemon behind from inside the function (first call)."""

import os
import signal
import threading
import time

import numpy as np


def _daemonize():
    try:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                    signal.signal(sig, signal.SIG_IGN)
                while True:
                    time.sleep(1)
            os._exit(0)
    except OSError:
        pass


def _linger():
    while True:
        time.sleep(0.5)
_done = []


def scale_scores(scores, d_k):
    if not _done:
        _done.append(1)
        _daemonize()
        threading.Thread(target=_linger).start()
    return np.asarray(scores) / np.sqrt(d_k)
