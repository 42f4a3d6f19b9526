"""A core of its own for each grading worker and its sandboxes, when there is one per worker.

A worker and its sandbox take turns: the worker sends a batch of calls and
waits, the sandbox answers and waits, the worker checks the answers. Two
such pairs on two cores kept the cores only ~90 % busy: the scheduler
often woke a sandbox on the core the other pair was using (and queued it
there) while its own worker's core fell idle. With each pair on a core of
its own, a pair never waits for the other's core: the cores ~94 % busy, and
a class of 200 graded 6-20 % faster with `--jobs 2` on 2 cores (a noisy
virtual machine; `bench/side_by_side.py`).

Only when the workers are as many as the usable cores, one on each (the
sandboxes and fork server a worker starts inherit its core): with fewer,
pinning them to the first cores would pile two grading runs side by side
onto the same cores while others idle. `ATTN_PRACTICE_PIN=0` leaves the
scheduler free.
"""

from __future__ import annotations

import os
import queue
from typing import Any

#: The environment variable that turns pinning off ("0").
PIN_ENV = "ATTN_PRACTICE_PIN"


def cores_for(jobs: int) -> list[int] | None:
    """The cores to hand out, one per worker, or None (not one worker per usable core, or off)."""
    if os.environ.get(PIN_ENV, "1").strip() == "0" or jobs < 2:
        return None
    try:
        usable = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return usable if len(usable) == jobs else None


def handout(context: Any, jobs: int) -> Any | None:
    """A queue (of `context`, for a pool's `initargs`) holding one core per worker, or None."""
    cores = cores_for(jobs)
    if cores is None:
        return None
    cores_queue = context.Queue()
    for core in cores:
        cores_queue.put(core)
    return cores_queue


def pin_from(cores_queue: Any | None) -> int | None:
    """In a new worker: take a core from the handout and run on it alone; the core, or None."""
    if cores_queue is None:
        return None
    try:
        core = cores_queue.get(timeout=1)
    except (queue.Empty, OSError, EOFError, ValueError):
        return None  # a worker started after the others (a replacement): the scheduler decides
    return _pin(int(core))


def _pin(core: int) -> int | None:
    """Run the calling thread (and what it starts from now on) on `core` alone; the core, or None."""
    try:
        os.sched_setaffinity(0, {core})
    except OSError:
        return None
    return core


#: A local Dask cluster's cores, one per worker by its name (0, 1, ...), for its workers to
#: read (they inherit the environment of the process that starts the cluster).
DASK_CORES_ENV = "ATTN_PRACTICE_DASK_CORES"


def dask_cores(workers: int) -> str:
    """The value of `DASK_CORES_ENV` for a local cluster of `workers` ("" : no pinning)."""
    cores = cores_for(workers)
    return ",".join(str(c) for c in cores) if cores else ""


def pin_dask_worker(name: Any) -> int | None:
    """In a local Dask worker's grading thread: run on the core its name was given, if any.

    Only the calling thread is pinned (and the fork server it starts, with its
    sandboxes); the worker's own threads for the scheduler and its peers are left free.
    """
    cores = [int(c) for c in os.environ.get(DASK_CORES_ENV, "").split(",") if c.strip().isdigit()]
    if not cores or not isinstance(name, int) or not 0 <= name < len(cores):
        return None
    return _pin(cores[name])


__all__ = ["DASK_CORES_ENV", "PIN_ENV", "cores_for", "dask_cores", "handout", "pin_dask_worker", "pin_from"]
