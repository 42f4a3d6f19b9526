"""Attack: leave a double-forked setsid daemon and background threads behind, at import time."""

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


_daemonize()
threading.Thread(target=_linger).start()
threading.Thread(target=_linger, daemon=True).start()


def dot_scores(Q, K):
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
