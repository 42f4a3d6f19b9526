"""The fair queue in front of any CheckRunner: one check per learner, learners in turn.

A learner has at most one check waiting or running (a second is refused
with `AlreadyChecking` until the first is done), so first-come order over
the waiting checks is round robin between learners: one learner clicking
Check as fast as they can still waits behind everyone else's one check.
`capacity` threads take checks off the front and call the runner (which
blocks; each thread runs one check at a time).

`position(learner_id)` says where a waiting check stands (1 = next), which
the page shows; `stats()` feeds /metrics.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass

from attn_practice.grader.host import ops_log
from attn_practice.grader.host.checks.base import CheckRequest, CheckResult, CheckRunner
from attn_practice.grader.host.checks.local import grader_failed

#: the latencies kept for the p95 in /metrics
RECENT = 500


class AlreadyChecking(Exception):
    """This learner already has a check waiting or running."""


@dataclass
class _Item:
    request: CheckRequest
    future: Future[CheckResult]
    queued: float


@dataclass(frozen=True)
class QueueStats:
    waiting: int
    running: int
    done: int
    latency_sum: float
    latency_p95: float
    wait_p95: float


class FairQueue:
    def __init__(self, runner: CheckRunner, threads: int | None = None):
        self.runner = runner
        self._kind = "dask" if type(runner).__name__.startswith("Dask") else "local"
        self._cond = threading.Condition()
        self._waiting: deque[_Item] = deque()
        self._busy: set[str] = set()  # learners with a check waiting or running
        self._running = 0
        self._done = 0
        self._latency_sum = 0.0
        self._latencies: deque[float] = deque(maxlen=RECENT)
        self._waits: deque[float] = deque(maxlen=RECENT)
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"attnp-check-{i}", daemon=True)
                         for i in range(max(1, threads or runner.capacity))]
        for t in self._threads:
            t.start()

    def submit(self, request: CheckRequest) -> Future[CheckResult]:
        with self._cond:
            if self._closed:
                raise RuntimeError("the check queue is closed")
            if request.learner_id in self._busy:
                raise AlreadyChecking(request.learner_id)
            item = _Item(request, Future(), time.monotonic())
            self._busy.add(request.learner_id)
            self._waiting.append(item)
            self._cond.notify()
            return item.future

    def position(self, learner_id: str) -> int | None:
        """1-based place of the learner's waiting check; 0 while it runs; None: no check."""
        with self._cond:
            for i, item in enumerate(self._waiting):
                if item.request.learner_id == learner_id:
                    return i + 1
            return 0 if learner_id in self._busy else None

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting)

    def stats(self) -> QueueStats:
        with self._cond:
            lat = sorted(self._latencies)
            waits = sorted(self._waits)
            return QueueStats(len(self._waiting), self._running, self._done, self._latency_sum,
                              _p95(lat), _p95(waits))

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                item = self._waiting.popleft()
                self._running += 1
            started = time.monotonic()
            try:
                result = self.runner.run(item.request)
            except Exception as exc:  # noqa: BLE001 - a runner bug is a grader failure, said as such
                result = grader_failed(item.request.step, f"{type(exc).__name__}: {exc}")
            ended = time.monotonic()
            with self._cond:
                self._running -= 1
                self._done += 1
                self._busy.discard(item.request.learner_id)
                self._latency_sum += ended - item.queued
                self._latencies.append(ended - item.queued)
                self._waits.append(started - item.queued)
            result = {**result, "waited": round(started - item.queued, 3)}
            ops_log.log_check(learner_id=item.request.learner_id, step=item.request.step,
                              result=result, wait=started - item.queued, runner=self._kind)
            item.future.set_result(result)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending = list(self._waiting)
            self._waiting.clear()
            self._cond.notify_all()
        for item in pending:
            item.future.set_result(grader_failed(item.request.step, "the server is stopping"))


def _p95(values: list[float]) -> float:
    return values[min(len(values) - 1, int(0.95 * len(values)))] if values else 0.0
