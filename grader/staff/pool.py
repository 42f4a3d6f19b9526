"""The local pool's worker processes: started early, one warm engine each, ended quickly.

A worker's start-up (NumPy, pytest, Hypothesis, the grader, its fork server)
takes ~0.6 s on one core. `start_early` spawns the workers before the class
is even read, so that start-up runs on the cores the parent's intake leaves
idle; `take` hands them to the batch driver, `discard` ends them unused. A
worker builds its engine on its first task, from the `WorkerSetup` each task
carries (the course is known only by then), and again whenever it differs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_practice.grader.sandbox.prestart import one_blas_thread_by_default, prestart
from attn_practice.grader.staff.affinity import handout, pin_from
from attn_practice.grader.staff.spawn import leave_interrupts_to_the_parent, worker_context

if TYPE_CHECKING:  # the engine's imports are what a worker spends its start on: not the parent's
    from attn_practice.grader.engine.engine import Engine, RunOptions
    from attn_practice.grader.staff.worker import WarmEngine

#: Variables the parent may set after its workers started that their engine depends on:
#: Hypothesis's private folder (`cache.isolate_hypothesis`), no bytecode beside private suites.
PASSED_ON = ("HYPOTHESIS_STORAGE_DIRECTORY", "PYTHONDONTWRITEBYTECODE")


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker's engine is built from: the options, and the parent's say on `PASSED_ON`."""

    options: RunOptions
    env: tuple[tuple[str, str], ...] = ()


def worker_setup(options: RunOptions) -> WorkerSetup:
    return WorkerSetup(options, tuple((k, os.environ[k]) for k in PASSED_ON if k in os.environ))


# -- worker side -------------------------------------------------------------------
_WARM: WarmEngine | None = None


def _init_worker(cores: Any = None) -> None:
    global _WARM
    pin_from(cores)  # first: the fork server started below, and its sandboxes, share the core
    leave_interrupts_to_the_parent()  # Ctrl-C is the batch's to handle: it shuts this pool down
    atexit.register(_leave_quickly)  # first registered, so it runs after every later handler
    prestart()  # its fork server imports NumPy while this process imports the engine
    from attn_practice.grader.staff.worker import WarmEngine  # the engine, pytest, Hypothesis

    _WARM = WarmEngine()


def _engine(setup: WorkerSetup) -> Engine:
    assert _WARM is not None, "not a pool worker"
    os.environ.update(setup.env)
    sys.dont_write_bytecode = sys.dont_write_bytecode or "PYTHONDONTWRITEBYTECODE" in dict(setup.env)
    return _WARM.get(setup.options, key=setup.env)  # the environment it was built under, too


def grade_task(setup: WorkerSetup, path: str, label: str, step_ids: list[str],
               files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Worker task: grade a folder (or in-memory `files`) and return plain data."""
    from attn_practice.grader.staff.worker import grade_with

    return grade_with(_engine(setup), Path(path), step_ids, label=label, files=files).to_dict()


def ping() -> bool:
    """A pool's first task: when it fails, its workers could not start at all."""
    return True


def _leave_quickly() -> None:
    """A pool worker's last act: close its engine, then end without the interpreter's teardown.

    Tearing down a warm worker (NumPy, pytest, Hypothesis, a frozen heap of recordings)
    took ~0.6 s at the end of every batch, with both cores idle and the report waiting.
    Everything this worker owns is released here first (sandboxes, fork server, temp
    folders); every exit handler registered after this one has already run, and
    multiprocessing ran its own before the process began to exit.
    """
    if _WARM is not None:
        _WARM.close()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


# -- parent side -------------------------------------------------------------------
def new_pool(jobs: int) -> ProcessPoolExecutor:
    """`jobs` worker processes (spawned: nothing of this process's state is shared)."""
    one_blas_thread_by_default()  # the workers, started after this, inherit it
    context = worker_context()
    return ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker,
                               initargs=(handout(context, jobs),))  # a core each (see `affinity`)


@dataclass
class StartedPool:
    pool: ProcessPoolExecutor
    jobs: int
    ping: Future[bool]


_EARLY: StartedPool | None = None


def start(jobs: int) -> StartedPool:
    """A new pool of `jobs` workers, its first task the `ping` that says they could start.

    One ping per worker: a spawning pool starts a worker per task submitted, so with
    one ping the second worker began its ~0.6 s start-up only when the first
    submission came, after the intake, while the first worker already graded alone.
    """
    pool = new_pool(jobs)
    pings = [pool.submit(ping) for _ in range(jobs)]
    return StartedPool(pool, jobs, pings[0])


def start_early(jobs: int) -> None:
    """Spawn `jobs` workers now, for a batch about to come (see the module docstring)."""
    global _EARLY
    if jobs > 1 and _EARLY is None:
        _EARLY = start(jobs)


def take(jobs: int) -> StartedPool | None:
    """The early pool when it has at least `jobs` workers, else None (a smaller one is ended).

    More do no harm: it has at most `--jobs` workers, and a batch of fewer tasks than
    that never has more in flight than it has tasks.
    """
    global _EARLY
    early, _EARLY = _EARLY, None
    if early is not None and early.jobs < jobs:
        early.pool.shutdown(wait=True, cancel_futures=True)
        return None
    return early


def discard() -> None:
    """End an early pool nobody took (the class was one submission, or all cached)."""
    early = take(0)
    if early is not None:
        early.pool.shutdown(wait=True, cancel_futures=True)
