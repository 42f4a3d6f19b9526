"""Attack: atexit/finalizer/excepthook/signal handlers that print 'passed' and write fake replies."""

import atexit
import os
import signal
import socket
import stat
import sys
import weakref

import numpy as np

FAKE = b'\x00\x00\x00\x0b\x00\x00\x00\x00{"ok":true}'


def _fake_reply():
    print("===== 6 passed =====")
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, FAKE)
        except OSError:
            pass


class _Haunt:
    def __del__(self):
        _fake_reply()


atexit.register(_fake_reply)
atexit.register(os._exit, 0)
_ghost = _Haunt()
weakref.finalize(_ghost, _fake_reply)
sys.excepthook = lambda *a: _fake_reply()
signal.signal(signal.SIGTERM, lambda *a: _fake_reply())


def dot_scores(Q, K):
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
