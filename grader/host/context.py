"""What every view of one host process shares: the store, the check queue, the live hub, keys.

Nothing here is state another process needs: the class's settings are read
from the store (cached for `KEYS_TTL` seconds, so a join code rotated on one
process is honoured by all within that), the queue and rate limits are this
process's own share of the work.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.host.auth import ClassKeys, RateLimiter
from attn_practice.grader.host.checks.base import CheckRunner
from attn_practice.grader.host.checks.queue import FairQueue
from attn_practice.grader.host.lesson import Lesson
from attn_practice.grader.host.live import LiveHub
from attn_practice.grader.host.store.base import Store

KEYS_TTL = 2.0


@dataclass
class Limits:
    """Rate limits: attempts at secrets per client address; checks and saves per learner."""

    secrets: RateLimiter = field(default_factory=lambda: RateLimiter(burst=10, per_second=0.2))
    # a whole class behind one NAT joins within a minute; a flood is still bounded
    joins: RateLimiter = field(default_factory=lambda: RateLimiter(burst=400, per_second=5.0))
    checks: RateLimiter = field(default_factory=lambda: RateLimiter(burst=3, per_second=0.25))
    saves: RateLimiter = field(default_factory=lambda: RateLimiter(burst=40, per_second=2.0))


class HostContext:
    def __init__(self, store: Store, runner: CheckRunner, catalog: list[Exercise], *,
                 course: Any = None, base_url: str = "", limits: Limits | None = None):
        self.store = store
        self.runner = runner
        self.queue = FairQueue(runner)
        self.catalog = catalog
        self.course = course
        self.lesson = Lesson(store, catalog)
        self.live = LiveHub(store)
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

    def close(self) -> None:
        self.queue.close()
        self.runner.close()
        self.store.close()
