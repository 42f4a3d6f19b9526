"""Checks on a Dask cluster (`host --dask ADDRESS`): the same check, run on another machine.

A check travels as plain data (the learner's files as text, the step, the
other steps' standing, the engine options) and runs `work.check_files` on a
worker, the very function the local pool runs, so the report is the same
wherever it was made. Workers need attn-practice installed (as for
`grade --dask`); nothing is read from a shared filesystem and no learner
code runs in the server or in the worker's own process (the engine's
sandbox runs it, as everywhere).

A worker that dies mid-check (CONTRACT §4.4): the scheduler notices and
hands the check to another worker. On the cluster this runner starts itself
(`--dask local`) the scheduler gives up on a check after it has killed
`ALLOWED_FAILURES + 1` workers, so a check is retried once; on a cluster of
your own, set `distributed.scheduler.allowed-failures` the same way (README).
Whatever else goes wrong between us and the cluster (the check given up as
killing workers, a lost connection, a check over `CHECK_TIMEOUT`) gets one
more submission; if that fails too, the learner is told the grader failed,
never that their code did, and the check is not counted against them
(`grader_failed` in the result, as the local pool says it).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from attn_practice.grader.engine.engine import RunOptions
from attn_practice.grader.host.checks import work
from attn_practice.grader.host.checks.base import CheckRequest, CheckResult
from attn_practice.grader.host.checks.local import grader_failed, stopping

NO_DASK = "Dask is not installed: pip install '.[dask]' in the attn-practice checkout"
LOCAL = "local"
#: Submissions of one check (the scheduler's own re-runs after a worker death come on top).
ATTEMPTS = 2
#: Worker deaths the scheduler tolerates per check on the cluster we start (`--dask local`).
ALLOWED_FAILURES = 1
#: Seconds before we stop waiting for one check (the sandbox's own limits are far lower).
CHECK_TIMEOUT = 600.0
#: Seconds the scheduler may be unreachable before a check waiting on it is given up.
SCHEDULER_GRACE = 10.0
POLL_SECONDS = 0.5
#: Seconds a `ready()` answer is reused (load balancers poll /readyz often).
READY_TTL = 2.0
#: Seconds to reach the scheduler when the server starts.
CONNECT_TIMEOUT = 10.0

#: One check at a time per worker process: the worker's engine is shared and not thread-safe.
_WORKER_LOCK = threading.Lock()


def check_on_worker(step: str, files: dict[str, str], known_failing: frozenset[str],
                    known_unchecked: frozenset[str], options: RunOptions,
                    unchanged: frozenset[str] | None = None) -> CheckResult:
    """Runs on a Dask worker: `work.check_files` under this process's one-check-at-a-time lock."""
    with _WORKER_LOCK:
        result = work.check_files(step, files, known_failing, known_unchecked, options, unchanged)
    result["worker_pid"] = os.getpid()
    return result


class DaskUnavailable(RuntimeError):
    """The scheduler `--dask` names cannot be reached (said at start, before any link is printed)."""


def warm_worker(options: RunOptions) -> int:
    """Runs on each worker: build its engine now; returns the worker's pid (an Engine stays put)."""
    work.engine(options)
    return os.getpid()


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise RuntimeError(NO_DASK) from exc
    return distributed


class DaskCheckRunner:
    """A `CheckRunner` whose checks run on a Dask cluster (`address`, or "local" for a LocalCluster)."""

    def __init__(self, address: str, options: RunOptions | None = None, jobs: int | None = None,
                 *, local_workers: int = 2, connect_timeout: float = CONNECT_TIMEOUT):
        distributed = _import_distributed()
        import dask

        self._distributed = distributed
        self.options = options or RunOptions(speed_notes=True)
        self.address = address
        self._cluster = None
        if address == LOCAL:
            with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
                self._cluster = distributed.LocalCluster(
                    n_workers=local_workers, threads_per_worker=1, processes=True,
                    dashboard_address=None)
            self.client = distributed.Client(self._cluster, timeout=connect_timeout)
        else:
            try:
                self.client = distributed.Client(address, timeout=connect_timeout)
            except (OSError, TimeoutError, ValueError) as exc:
                raise DaskUnavailable(
                    f"cannot reach the Dask scheduler at {address} within {connect_timeout:.0f} s "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}): start "
                    "`dask scheduler` there, or leave out --dask to check on this machine") from None
        self.capacity = max(1, jobs or self._workers())
        self._closed = False
        self._connect_timeout = connect_timeout
        self._reconnect_lock = threading.Lock()
        self._ready_at = 0.0
        self._ready = True

    def _workers(self) -> int:
        """How many worker processes the cluster has now (each runs one check at a time)."""
        try:
            return len(self.client.scheduler_info(n_workers=-1).get("workers", {}))
        except TypeError:  # older distributed: no n_workers argument
            return len(self.client.scheduler_info().get("workers", {}))

    def _connected(self) -> bool:
        """Whether the client is connected, waiting up to SCHEDULER_GRACE for a reconnection.

        Dask's client stops trying to reconnect after a while and closes; a
        scheduler restarted later is then reached with a new client, so the
        server need not be restarted with it.
        """
        deadline = time.monotonic() + SCHEDULER_GRACE
        while self.client.status != "running":
            if self._closed or time.monotonic() > deadline:
                return False
            if self.client.status in ("closed", "closing") and self._cluster is None:
                self._new_client()
            else:
                time.sleep(POLL_SECONDS)
        return True

    def _new_client(self) -> None:
        with self._reconnect_lock:
            if self.client.status not in ("closed", "closing") or self._closed:
                return
            try:
                client = self._distributed.Client(self.address, timeout=self._connect_timeout)
            except (OSError, TimeoutError, ValueError):
                time.sleep(POLL_SECONDS)
                return
            self.client = client

    def warm(self) -> None:
        """Build each worker's engine now, so the class's first checks are not slow."""
        self.client.run(warm_worker, self.options)

    def run(self, request: CheckRequest) -> CheckResult:
        last = ""
        for _ in range(ATTEMPTS):
            if self._closed:
                return stopping(request.step)
            if not self._connected():
                last = f"the Dask scheduler at {self.address} is not reachable"
                continue
            future = None
            try:
                unchanged = request.extra.get("unchanged")
                future = self.client.submit(
                    check_on_worker, request.step, dict(request.files),
                    frozenset(request.known_failing), frozenset(request.known_unchecked),
                    self.options, None if unchanged is None else frozenset(unchanged),
                    pure=False, key=f"attn-check-{request.step}-{time.time_ns()}")
                return self._wait(future)
            except Exception as exc:  # noqa: BLE001 - a grader failure, said as such (§4.4)
                last = f"{type(exc).__name__}: {exc}"
                if future is not None:
                    future.cancel()
            finally:  # the cluster may forget it now: a result kept on a worker that then dies
                if future is not None:  # is computed again while any client holds its future
                    future.release()
        return grader_failed(request.step, f"the checking cluster failed: {last}")

    def _wait(self, future: Any) -> CheckResult:
        """The check's result; gives up after CHECK_TIMEOUT, or once the scheduler has been
        unreachable, or the cluster without any worker, for SCHEDULER_GRACE seconds."""
        deadline = time.monotonic() + CHECK_TIMEOUT
        lost_since: float | None = None
        idle_since: float | None = None
        asked = 0.0
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                pass
            now = time.monotonic()
            if self.client.status == "running":
                lost_since = None
                if now - asked > 2 * POLL_SECONDS:  # a cluster left with no worker at all
                    asked = now
                    try:
                        workers = self._workers()
                    except Exception:  # noqa: BLE001 - asked again next time
                        workers = 1
                    idle_since = None if workers else (idle_since or now)
                    if idle_since is not None and now - idle_since > SCHEDULER_GRACE:
                        raise RuntimeError(f"the Dask cluster at {self.address} has no workers")
            elif lost_since is None:
                lost_since = now
            elif now - lost_since > SCHEDULER_GRACE:
                raise RuntimeError(f"lost the Dask scheduler at {self.address}")
            if now > deadline:
                raise TimeoutError(f"no result after {CHECK_TIMEOUT:.0f} s")

    def ready(self) -> bool:
        """True while the scheduler answers and has at least one worker (cached READY_TTL s)."""
        if self._closed:
            return False
        now = time.monotonic()
        if now - self._ready_at > READY_TTL:
            try:
                self._ready = self.client.status == "running" and self._workers() > 0
            except Exception:  # noqa: BLE001 - any failure to ask means not ready
                self._ready = False
            self._ready_at = now
        return self._ready

    def close(self) -> None:
        self._closed = True
        try:
            self.client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()
