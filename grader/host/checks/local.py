"""Checks on this machine: a bounded pool of worker processes, each with one warm Engine.

One worker per core by default (`jobs`). The pool is the batch grader's
(spawned processes, `work.init_worker`), so learner code runs only in the
sandboxes those workers start, never in the server. A worker that dies
mid-check (it should not: the sandbox takes the blows) is replaced and the
check run once more; a second death gives a report that says the grader
failed, never a verdict on the learner's code (CONTRACT §4.4).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from attn_practice import __version__
from attn_practice.grader.engine.engine import RunOptions
from attn_practice.grader.host.checks import widget_work, work
from attn_practice.grader.host.checks.base import CheckRequest, CheckResult, WorkersBusy
from attn_practice.grader.staff.spawn import worker_context

ATTEMPTS = 2


def grader_failed(step: str, what: str) -> CheckResult:
    """A report that says the grader, not the learner, failed (never counted as a check verdict)."""
    return {"report": {"submission": "", "grader_version": __version__, "steps": [],
                       "error": f"internal grader error while checking {step} (not a problem with "
                                f"your code; check again): {what[:300]}"},
            "worked_html": "", "seconds": 0.0, "grader_failed": True}


def usable_cores() -> int:
    """The cores this process may run on (its affinity, e.g. a container's share), else all."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def stopping(step: str) -> CheckResult:
    """The answer to a check the server did not run because it is stopping (run again on start)."""
    return {**grader_failed(step, "the server is stopping"), "stopping": True}


class LocalCheckRunner:
    """`capacity` worker processes; `run` blocks the calling thread until its check is done."""

    def __init__(self, options: RunOptions | None = None, jobs: int | None = None):
        self.options = options or RunOptions(speed_notes=True)
        # one worker more than the cores this process may use: a check is a conversation with
        # its sandbox, and a worker waits for the sandbox's answers about a third of the time,
        # so with one worker per core the queue grew while the cores were a third idle (200
        # learners on 2 cores: check p95 0.7-0.8 s with 2 workers, 0.57 s with 3; issue 40).
        # The server's own work (pages, saves) is light and the workers run niced
        # (`work.WORKER_NICE`), so HTTP still takes the CPU whenever it needs it.
        self.capacity = max(1, jobs or usable_cores() + 1)
        self._lock = threading.Lock()
        self._closed = False
        self._pool: ProcessPoolExecutor | None = None
        self._pool = self._new_pool()
        # widget jobs share the workers with checks, but at most this many at once: a check
        # waits behind at most one widget call (bounded by its timeout), never behind a flood
        self._widget_slots = threading.BoundedSemaphore(max(1, self.capacity // 2))

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.capacity, mp_context=worker_context(),
                                   initializer=work.init_worker, initargs=(self.options, os.getpid()))

    def warm(self) -> None:
        """Start every worker now (each builds its engine, collects its pytest session and
        fills the example store), so the first learners' checks are not slow."""
        pool = self._pool
        if pool is not None:
            for f in [pool.submit(widget_work.warm_up) for _ in range(self.capacity)]:
                f.result()

    def worker_stats(self) -> list[dict]:
        """Each worker's `work.worker_stats` (asked as many times as there are workers)."""
        pool = self._pool
        if pool is None:
            return []
        return [f.result() for f in [pool.submit(work.worker_stats) for _ in range(self.capacity)]]

    def run(self, request: CheckRequest) -> CheckResult:
        last = ""
        for _ in range(ATTEMPTS):
            with self._lock:
                if self._closed or self._pool is None:
                    return stopping(request.step)
                pool = self._pool
            try:
                unchanged = request.extra.get("unchanged")
                return pool.submit(widget_work.check_files, request.step, dict(request.files),
                                   request.known_failing, request.known_unchecked,
                                   None if unchanged is None else frozenset(unchanged),
                                   bool(request.extra.get("widgets"))).result()
            except BrokenProcessPool:
                if self._closed:
                    return stopping(request.step)
                last = "a checking worker died"
                with self._lock:
                    if self._pool is pool and not self._closed:
                        pool.shutdown(wait=False, cancel_futures=False)
                        self._pool = self._new_pool()
            except Exception as exc:  # noqa: BLE001 - the grader failing is said as such
                last = f"{type(exc).__name__}: {exc}"
        return grader_failed(request.step, last)

    def widget(self, name: str, params: tuple, files: dict[str, str], timeout: float) -> dict:
        """A widget's data computed in a check worker on the learner's `files` (`widget_work`).

        Blocks up to `timeout` (for a slot, then for the answer): raises TimeoutError when
        it did not come, RuntimeError when the pool is stopping or broke.
        """
        return self._widget_job(widget_work.widget_files, (name, tuple(params), dict(files)),
                                timeout)

    def widgets(self, asks: list[tuple[str, tuple]], files: dict[str, str],
                timeout: float) -> list[dict]:
        """Several widgets on one file set, in one worker job (`widget_work.widgets_files`)."""
        return self._widget_job(widget_work.widgets_files,
                                ([(n, tuple(p)) for n, p in asks], dict(files)), timeout)

    def _widget_job(self, fn: Any, args: tuple, timeout: float) -> Any:
        if not self._widget_slots.acquire(timeout=timeout):
            raise WorkersBusy("the checking workers are busy")
        with self._lock:
            pool = None if self._closed else self._pool
        if pool is None:
            self._widget_slots.release()
            raise RuntimeError("the server is stopping")
        try:
            future = pool.submit(fn, *args)
        except Exception:
            self._widget_slots.release()
            raise
        future.add_done_callback(lambda _: self._widget_slots.release())  # held until it ends
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            if future.cancel():  # still waiting behind checks: it never ran
                raise WorkersBusy("the checking workers are busy") from None
            raise
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool and not self._closed:
                    pool.shutdown(wait=False, cancel_futures=False)
                    self._pool = self._new_pool()
            raise RuntimeError("a checking worker died") from None

    def ready(self) -> bool:
        return not self._closed and self._pool is not None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
