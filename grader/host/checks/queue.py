"""The fair queue in front of any CheckRunner: learners in turn, a newer check replaces a waiting one.

Round robin between learners, not between checks: each learner (account)
with work waiting has one place in the rotation, and a worker takes the
first check of the learner at the front, who goes to the back if more is
waiting. So whatever one account sends, an honest learner's check starts
after at most one check of each other account, and each of those ends
within a check's wall-clock budget (`work.CHECK_BUDGET`): several accounts
of one person delay an honest learner by at most one budget each.

A learner has at most one check waiting per step. A second request for the
same step and the same files while one waits or runs is refused
(`AlreadyChecking`: nothing new to grade); one with changed files replaces
the waiting one, which is answered at once with a result saying so
(`superseded`), never graded. `position(learner_id)` says where a waiting
check stands (1 = next) and `estimate` how long until its result, from the
check times measured here. `on_change` hears positions only when they
change, coalesced to at most one call per `NOTIFY_SECONDS` (see
`notify.QueueNotifier`), never a tick per waiting learner.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from attn_practice.grader.host import ops_log
from attn_practice.grader.host.checks.base import CheckRequest, CheckResult, CheckRunner
from attn_practice.grader.host.checks.local import grader_failed, stopping
from attn_practice.grader.host.checks.notify import Changes, QueueNotifier

#: the latencies kept for the p95 in /metrics
RECENT = 500
#: a check's time before any was measured (seconds): a mistake's, on a warm worker
FIRST_GUESS = 0.6


class AlreadyChecking(Exception):
    """This learner already has this check (same step, same files) waiting or running."""


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
    replaced: int = 0
    check_seconds: float = FIRST_GUESS


def superseded(step: str) -> CheckResult:
    """The answer to a waiting check a newer one of the same learner replaced (not counted)."""
    out = grader_failed(step, "")
    out["report"]["error"] = (f"Your newer check of {step} replaced this one before it ran: "
                              "its result shows when it is done.")
    out["superseded"] = True
    return out


class FairQueue:
    def __init__(self, runner: CheckRunner, threads: int | None = None,
                 on_change: Callable[[Changes], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.runner = runner
        self.clock = clock
        self._kind = "dask" if type(runner).__name__.startswith("Dask") else "local"
        self._cond = threading.Condition()
        self._rotation: deque[str] = deque()  # learners with a check waiting, in turn
        self._waiting: dict[str, deque[_Item]] = {}
        self._running: dict[int, _Item] = {}
        self._done = 0
        self._replaced = 0
        self._latency_sum = 0.0
        self._latencies: deque[float] = deque(maxlen=RECENT)
        self._waits: deque[float] = deque(maxlen=RECENT)
        self._runs: deque[float] = deque(maxlen=50)  # recent checks' own times, for estimates
        self._closed = False
        self.width = max(1, threads or runner.capacity)
        self.notifier = QueueNotifier(self.snapshot, on_change) if on_change else None
        #: wraps each run, in the check thread (`stored.StoredQueue`: the learner's standing
        #: read and the imported steps' reports stored there, never on the event loop)
        self.around: Callable[[CheckRequest, Callable[[CheckRequest], CheckResult]], CheckResult] | None = None
        self._threads = [threading.Thread(target=self._work, name=f"attnp-check-{i}", daemon=True)
                         for i in range(self.width)]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------ in
    def submit(self, request: CheckRequest) -> Future[CheckResult]:
        with self._cond:
            if self._closed:
                raise RuntimeError("the check queue is closed")
            who = request.learner_id
            mine = self._waiting.get(who)
            same = [it for it in [*(mine or ()), *self._running.values()]
                    if it.request.learner_id == who and it.request.step == request.step]
            if any(it.request.files == request.files for it in same):
                raise AlreadyChecking(who)
            item = _Item(request, Future(), self.clock())
            old = next((it for it in (mine or ()) if it.request.step == request.step), None)
            if old is not None:  # changed files: the newer check takes the waiting one's place
                assert mine is not None
                mine[mine.index(old)] = item
                item.queued = old.queued
                self._replaced += 1
                old.future.set_result(superseded(request.step))
            elif mine:
                mine.append(item)
            else:
                self._waiting[who] = deque([item])
                self._rotation.append(who)
            self._cond.notify()
        self._changed()
        return item.future

    # ------------------------------------------------------------------ where
    def position(self, learner_id: str) -> int | None:
        """1-based place of the learner's next waiting check; 0 while one runs; None: no check."""
        with self._cond:
            return self._position(learner_id)

    def _position(self, learner_id: str) -> int | None:
        if learner_id in self._waiting:
            return self._rotation.index(learner_id) + 1
        return 0 if any(it.request.learner_id == learner_id for it in self._running.values()) else None

    def check_seconds(self) -> float:
        """A check's time as measured here lately (the median of the last ones)."""
        with self._cond:
            return self._check_seconds()

    def _check_seconds(self) -> float:
        runs = sorted(self._runs)
        return runs[len(runs) // 2] if runs else FIRST_GUESS

    def estimate(self, position: int | None) -> float | None:
        """Seconds until the result of a check at `position`: the checks before it, `width` at a
        time, then its own."""
        if position is None:
            return None
        return round((math.ceil(position / self.width) + 1) * self.check_seconds(), 1)

    def snapshot(self) -> dict[str, tuple[str, int]]:
        """learner id -> (step, position) of every waiting or running check."""
        with self._cond:
            out = {it.request.learner_id: (it.request.step, 0) for it in self._running.values()}
            for i, who in enumerate(self._rotation):
                out[who] = (self._waiting[who][0].request.step, i + 1)
            return out

    def __len__(self) -> int:
        with self._cond:
            return sum(len(d) for d in self._waiting.values())

    def stats(self) -> QueueStats:
        with self._cond:
            lat = sorted(self._latencies)
            waits = sorted(self._waits)
            return QueueStats(sum(len(d) for d in self._waiting.values()), len(self._running),
                              self._done, self._latency_sum, _p95(lat), _p95(waits), self._replaced,
                              self._check_seconds())

    # ------------------------------------------------------------------ out
    def _take(self) -> _Item:
        who = self._rotation.popleft()
        mine = self._waiting[who]
        item = mine.popleft()
        if mine:
            self._rotation.append(who)  # the rest of theirs waits its turn behind everyone
        else:
            del self._waiting[who]
        return item

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._rotation and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                item = self._take()
                self._running[id(item)] = item
            self._changed()
            started = self.clock()
            try:
                result = (self.around(item.request, self.runner.run) if self.around is not None
                          else self.runner.run(item.request))
            except Exception as exc:  # noqa: BLE001 - a runner bug is a grader failure, said as such
                result = grader_failed(item.request.step, f"{type(exc).__name__}: {exc}")
            ended = self.clock()
            with self._cond:
                del self._running[id(item)]
                self._done += 1
                self._latency_sum += ended - item.queued
                self._latencies.append(ended - item.queued)
                self._waits.append(started - item.queued)
                if not result.get("grader_failed"):
                    self._runs.append(ended - started)
            result = {**result, "waited": round(started - item.queued, 3)}
            ops_log.log_check(learner_id=item.request.learner_id, step=item.request.step,
                              result=result, wait=started - item.queued, runner=self._kind)
            item.future.set_result(result)
            self._changed()

    def _changed(self) -> None:
        if self.notifier is not None:
            self.notifier.poke()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending = [it for d in self._waiting.values() for it in d]
            self._waiting.clear()
            self._rotation.clear()
            self._cond.notify_all()
        for item in pending:
            item.future.set_result(stopping(item.request.step))
        if self.notifier is not None:
            self.notifier.close()


def _p95(values: list[float]) -> float:
    return values[min(len(values) - 1, int(0.95 * len(values)))] if values else 0.0
