"""What every view of one host process shares: the store, the check queue, the live hub, keys.

Nothing here is state another process needs: the class's settings are read
from the store (cached for `KEYS_TTL` seconds, so a join code rotated on one
process is honoured by all within that), the queue and rate limits are this
process's own share of the work.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.host.auth import ClassKeys
from attn_practice.grader.host.checks.base import CheckRunner
from attn_practice.grader.host.checks.notify import Changes
from attn_practice.grader.host.checks.queue import FairQueue
from attn_practice.grader.host.checks.stored import StoredQueue
from attn_practice.grader.host.lesson import Lesson
from attn_practice.grader.host.limits import Limits  # the views' bounds, in one place
from attn_practice.grader.host.live import LiveHub
from attn_practice.grader.host.store.base import Store

KEYS_TTL = 2.0


class HostContext:
    def __init__(self, store: Store, runner: CheckRunner, catalog: list[Exercise], *,
                 course: Any = None, base_url: str = "", limits: Limits | None = None):
        self.store = store
        self.runner = runner
        raise_open_files()
        self.live = LiveHub(store)
        self.queue = StoredQueue(FairQueue(runner, on_change=self._tell_places), store)
        self.catalog = catalog
        self.course = course
        self.lesson = Lesson(store, catalog)
        from attn_practice.grader.host.store.schema import Dialect

        self.queue.resume(self.lesson, self._tell_checked, ready=self._live_loop_running,
                          everything=getattr(store, "dialect", None) == Dialect.SQLITE)
        self.limits = limits or Limits()
        self.base_url = base_url
        self.started = time.time()
        self._keys: ClassKeys | None = None
        self._keys_at = 0.0
        self._keys_lock = threading.Lock()

    def keys(self, fresh: bool = False) -> ClassKeys:
        with self._keys_lock:
            if fresh or self._keys is None or time.monotonic() - self._keys_at > KEYS_TTL:
                self._keys = ClassKeys.load(self.store)
                self._keys_at = time.monotonic()
            return self._keys

    def _live_loop(self) -> Any:
        task = getattr(self.live, "_task", None)
        return None if task is None or task.done() else task.get_loop()

    def _live_loop_running(self) -> bool:
        return self._live_loop() is not None

    def _tell_places(self, changes: Changes) -> None:
        """Queue places that moved (from the queue's notifier thread) to the learners' streams."""
        loop = self._live_loop()
        if loop is None:
            return
        for who, (step, position) in changes.items():
            data = {"step": step, "position": position, "estimate": self.queue.estimate(position)}
            loop.call_soon_threadsafe(self.live.tell_learner, who, "queue", data)

    def _tell_checked(self, learner_id: str, step: str, answer: dict[str, Any]) -> None:
        """A check run again after a restart: its answer to the learner's open pages."""
        loop = self._live_loop()
        if loop is not None:
            loop.call_soon_threadsafe(self.live.tell_learner, learner_id, "checked", answer)

    def close(self) -> None:
        self.queue.close()
        self.runner.close()
        self.store.close()


def raise_open_files() -> tuple[int, int]:
    """The soft limit on open files raised to the hard one (each open page holds a socket:
    a default 1024 stops a class near 400 learners). Returns (soft, hard) after."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)
