"""Worker processes that leave Ctrl-C to the process that started them.

A terminal's Ctrl-C reaches every process in its foreground group, the
pools' workers too. Each worker then printed a KeyboardInterrupt traceback
over the command's own "Stopped hosting" (or, caught while starting, a
FileNotFoundError for a lock its parent had already removed), and a worker
interrupted mid-check reports a grader failure, not a stop. The parent alone
decides: it shuts its pool down, and a worker finishes or drops its task as
told. A worker starts with SIGINT blocked (the mask is inherited through
fork and exec, so no Ctrl-C lands in its start-up), then ignores it for good
(`leave_interrupts_to_the_parent`, first thing in its initialiser).
Not for `--dask local`: a Dask worker told to close waits for its running
task, then its nanny kills it (leaving its temp folders); interrupted, it
stops at once and cleans up.
"""

from __future__ import annotations

import signal
from multiprocessing.context import SpawnContext, SpawnProcess

_INTERRUPT = {signal.SIGINT}


class _WorkerProcess(SpawnProcess):
    def start(self) -> None:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPT)  # this thread's; the child inherits it
        try:
            super().start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _WorkerContext(SpawnContext):
    Process = _WorkerProcess


def worker_context() -> SpawnContext:
    """The "spawn" start method, its processes started deaf to Ctrl-C (for a pool's `mp_context`)."""
    return _WorkerContext()


def leave_interrupts_to_the_parent() -> None:
    """In a worker: ignore Ctrl-C from now on, and drop one that came while it was blocked.

    Ignoring (not blocking) is what a fork server this worker starts inherits
    through exec; a sandbox sets its own signal handling when it is confined.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _INTERRUPT)


__all__ = ["leave_interrupts_to_the_parent", "worker_context"]
