"""The check queue, kept in the class's database: a check queued or running when the server
died runs again when it starts, and its result reaches the page by itself (CONTRACT §7.1).

`StoredQueue` is the `FairQueue` with a row per check in `check_queue`
(migration 4): written when the check is queued, deleted once the caller has
stored its answer (`settled`: a server killed between the result and the
answer runs the check again, never loses it). On start, `resume` takes the rows no live process holds (on SQLite, one
process: all of them; on PostgreSQL, rows whose owner has not beaten its
heart for `STALE_SECONDS`), checks each learner's latest saved files again,
stores the report as a check's and tells the learner's open pages (event
`checked`, the same answer the check request gives) and the instructor's.

The rows are read and written through the SQL store's own transaction
primitives (`_read`, `_write`): a store without them runs the queue in
memory only, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from attn_practice.grader.host.checks.base import CheckRequest, CheckResult
from attn_practice.grader.host.checks.queue import AlreadyChecking, FairQueue

HEARTBEAT_SECONDS = 15.0
STALE_SECONDS = 45.0

INSERT = ("INSERT INTO check_queue (id, learner_id, step, version_id, owner, heartbeat, created) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)")
DELETE = "DELETE FROM check_queue WHERE id = ?"
CLAIM = ("UPDATE check_queue SET owner = ?, heartbeat = ? WHERE owner <> ? AND heartbeat < ? "
         "RETURNING id, learner_id, step, version_id")
BEAT = "UPDATE check_queue SET heartbeat = ? WHERE owner = ?"
PENDING = "SELECT id, learner_id, step, version_id, owner FROM check_queue ORDER BY created"

#: (learner id, step, report answer) -> None: how a rerun check's result is told
Tell = Callable[[str, str, dict[str, Any]], None]


class StoredQueue:
    """A FairQueue whose checks outlive the process (see the module docstring)."""

    def __init__(self, inner: FairQueue, store: Any):
        from concurrent.futures import ThreadPoolExecutor

        from attn_practice.grader.host.store.base import new_id

        self.inner = inner
        self.store = store
        self.owner = new_id()
        self.durable = hasattr(store, "_write") and hasattr(store, "_read")
        self.resumed = 0  # checks run again after a restart (tests count them)
        self._closed = threading.Event()
        # rows written and deleted in order, off the event loop (submit is called on it)
        self._rows = ThreadPoolExecutor(1, thread_name_prefix="attnp-check-rows")
        self._open: dict[Future[CheckResult], str] = {}  # submitted, not yet `settled`: its row
        self._lock = threading.Lock()
        inner.around = self._around

    def __getattr__(self, name: str) -> Any:  # position, estimate, stats, snapshot...
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)

    def submit(self, request: CheckRequest) -> Future[CheckResult]:
        """Queue the check at once (in memory); its row is written in the background, and
        deleted once the caller has stored its answer (`settled`)."""
        from attn_practice.grader.host.store.base import new_id

        future = self.inner.submit(request)  # AlreadyChecking: nothing stored
        entry = new_id() if self.durable else None
        self._in_order(self._record, entry, request.learner_id, request.step)
        if entry is not None:
            with self._lock:
                self._open[future] = entry
        return future

    def settled(self, future: Future[CheckResult], *, stored: bool) -> None:
        """The check's answer is `stored` as the learner's report: its row goes. Not stored (the
        grader failed or was stopped, say killed worker by worker, or the request broke): the
        row stays and the check runs again at the next start. A check a newer one replaced
        before it ran leaves its row to that one.

        Never before the answer is stored: a server killed between the two would lose the
        check, its result stored nowhere and its row gone.
        """
        with self._lock:
            entry = self._open.pop(future, None)
        replaced = future.done() and future.exception() is None and bool(future.result().get("superseded"))
        if entry is not None and (stored or replaced):
            self._in_order(self._forget, entry)

    def _in_order(self, fn: Callable[..., None], *args: Any) -> None:
        if self.durable and args[0] is not None:
            try:
                self._rows.submit(fn, *args)
            except RuntimeError:  # closed: a row left over runs once more at the next start
                pass

    def _around(self, request: CheckRequest, run: Callable[[CheckRequest], CheckResult]) -> CheckResult:
        """In the check thread: the request told the learner's standing, then run; the imported
        steps graded first are stored as their latest results."""
        request, versions = self._with_standing(request)
        result = run(request)
        if not result.get("stopping"):
            self._store_imports(request.learner_id, result, versions)
        return result

    # ------------------------------------------------------------------ only what changed
    def _with_standing(self, request: CheckRequest) -> tuple[CheckRequest, dict[str, str]]:
        """`request` told which steps are unchanged since their last result (`checks.imports`),
        and the version id of each step's latest file."""
        if "unchanged" in request.extra:
            return request, dict(request.extra.get("versions", {}))
        try:
            latest = {s: v.id for s, v in self.store.latest_files(request.learner_id).items()}
            standing = self.store.latest_standings(request.learner_id)
        except Exception:  # noqa: BLE001 - unknown: the step alone is checked, as before
            return request, {}
        unchanged = sorted(s for s, (_, _, version) in standing.items() if latest.get(s) == version)
        extra = {**request.extra, "unchanged": unchanged, "versions": latest}
        return replace(request, extra=extra), latest

    def _store_imports(self, learner_id: str, result: CheckResult, versions: dict[str, str]) -> None:
        """The imported steps graded first: stored as their latest results (never an attempt)."""
        for step, report in (result.get("imports") or {}).items():
            if step in versions:
                try:
                    self.store.save_report(learner_id, step, versions[step], report)
                except Exception:  # noqa: BLE001 - graded again at the next check: nothing lost
                    pass

    # ------------------------------------------------------------------ rows
    def _record(self, entry: str, learner_id: str, step: str) -> None:
        try:
            latest = self.store.latest_files(learner_id).get(step)
            version = latest.id if latest is not None else ""
            now = time.time()
            self.store._write(lambda tx: tx.execute(INSERT, (entry, learner_id, step, version,
                                                             self.owner, now, now)))
        except Exception:  # noqa: BLE001 - the database away: the check still runs, unstored
            pass

    def _forget(self, entry: str | None) -> None:
        if entry is None:
            return
        try:
            self.store._write(lambda tx: tx.execute(DELETE, (entry,)))
        except Exception:  # noqa: BLE001 - a row left over is run again once, harmlessly
            pass

    def pending(self) -> list[tuple[str, str, str, str, str]]:
        """Every stored row: (id, learner id, step, version id, owner)."""
        return [tuple(r) for r in self.store._read(PENDING)] if self.durable else []  # type: ignore[misc]

    def claim(self, *, everything: bool) -> list[tuple[str, str, str, str]]:
        """Rows no live process holds, now ours. `everything`: the only process (SQLite)."""
        if not self.durable:
            return []
        now = time.time()
        cutoff = now + 1 if everything else now - STALE_SECONDS
        return [tuple(r) for r in self.store._write(  # type: ignore[misc]
            lambda tx: tx.execute(CLAIM, (self.owner, now, self.owner, cutoff)))]

    # ------------------------------------------------------------------ after a restart
    def resume(self, lesson: Any, tell: Tell, *, ready: Callable[[], bool] = lambda: True,
               everything: bool = True) -> threading.Thread:
        """Run the stored checks again, in a thread, once `ready()` (pages can hear the result).

        Keeps this process's rows alive (heartbeat) and, when several processes share the
        database (`everything` false), takes over rows another left stale.
        """
        def run() -> None:
            deadline = time.monotonic() + 10
            while not ready() and time.monotonic() < deadline and not self._closed.is_set():
                time.sleep(0.1)
            self._closed.wait(1.0)  # open pages reconnect their event streams meanwhile
            first = True
            while not self._closed.is_set():
                try:
                    for row in self.claim(everything=everything and first):
                        self._rerun(lesson, tell, *row)
                    if not first:
                        self.store._write(lambda tx: tx.execute(BEAT, (time.time(), self.owner)))
                except Exception:  # noqa: BLE001 - the database away: try again at the next beat
                    pass
                first = False
                self._closed.wait(HEARTBEAT_SECONDS)

        thread = threading.Thread(target=run, name="attnp-stored-checks", daemon=True)
        if self.durable:
            thread.start()
        return thread

    def _rerun(self, lesson: Any, tell: Tell, entry: str, learner_id: str, step: str,
               version: str) -> None:
        learner = self.store.learner(learner_id)
        if learner is None:
            self._forget(entry)
            return
        ex = lesson.step(step)
        last = self.store.latest_report(learner_id, step)
        if last is not None and version and last.version_id == version:
            self._forget(entry)  # it ran and was stored just before the server died
            return
        request, version_id = lesson.check_request(learner, ex)
        try:
            future = self.inner.submit(request)
        except AlreadyChecking:
            self._forget(entry)
            return
        self.resumed += 1

        def done(f: Future[CheckResult]) -> None:
            try:
                result = f.result()
                if result.get("stopping"):
                    return  # the row stays for the next start
                if result.get("superseded"):
                    self._forget(entry)
                    return
                answer = lesson.check_answer(learner, ex, result, version_id)
                if answer.get("counted"):
                    from attn_practice.grader.host.lesson import EventKind

                    self.store.record_event(learner.id, EventKind.CHECKED.value,
                                            {"step": ex.id, "status": answer["status"]})
                tell(learner.id, ex.id, answer)
            except Exception:  # noqa: BLE001 - the row stays: tried again at the next start
                return
            self._forget(entry)

        future.add_done_callback(done)

    def close(self) -> None:
        self._closed.set()
        self.inner.close()
        self._rows.shutdown(wait=True)
