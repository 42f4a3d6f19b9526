"""Every resource one request can hold, bounded per learner and per address, in one place.

The views consult `Limits` (one per process, on the `HostContext`) and never
wait on a shared thread pool for anything that may take long:

- rate limits (token buckets): attempts at secrets per address, checks and
  writes (saves, restores, resets, hints) per learner;
- slots (in flight at once): widget calls per learner (one; the next is 429
  at once), open event streams per learner, requests per signed-in browser;
- pacing, not refusing: joins from one address wait their turn (a lab
  behind one NAT still gets in while a flood from there is slowed), with at
  most `max_learners` learners in the class;
- bounded executors for blocking work that may take long (a widget's
  answer from the check workers, a password's scrypt), whose queues refuse
  with 429 and `Retry-After` rather than grow.

Connections (slow headers and bodies, connections per address) are bounded
before a request exists, in `connections`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from attn_practice.grader.host.auth import RateLimiter
from attn_practice.grader.host.web import Problem

T = TypeVar("T")

#: learners a class takes unless its course file says `max_learners`
DEFAULT_MAX_LEARNERS = 2000
#: event streams one learner may hold open (a few tabs; the page opens one)
STREAMS_PER_LEARNER = 4
#: requests one browser (session cookie) may have in flight at once; the rest 429 at once
REQUESTS_PER_BROWSER = 12  # a page over HTTP/2 asks for several at once
#: seconds a join from a busy address may wait for its turn before it is told to retry
MAX_JOIN_WAIT = 30.0  # under a reverse proxy's usual 60 s read timeout


def seconds(wait: float) -> int:
    """Whole seconds to wait, rounded up (never "wait 0 s")."""
    return max(1, int(wait + 0.999))


def too_busy(message: str, wait: float) -> Problem:
    """A 429 the page (or person) can act on: what to do, and when to try again."""
    return Problem(429, message, {"Retry-After": str(seconds(wait))})


class Bucket(RateLimiter):
    """A token bucket that can also be consulted without spending (before costly work)."""

    def wait(self, key: str) -> float:
        """Seconds until a token is there for `key` (0.0: one is there now); spends nothing."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate


class Slots:
    """At most `per_key` holders at once per key (a learner, a browser): `enter` is False past it."""

    def __init__(self, per_key: int):
        self.per_key = per_key
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def enter(self, key: str) -> bool:
        with self._lock:
            n = self._held.get(key, 0)
            if n >= self.per_key:
                return False
            self._held[key] = n + 1
            return True

    def leave(self, key: str) -> None:
        with self._lock:
            n = self._held.get(key, 0) - 1
            if n > 0:
                self._held[key] = n
            else:
                self._held.pop(key, None)


class Pacer:
    """Per key, one turn every `1/per_second` seconds after a burst: callers wait for their turn.

    A flood from one address is slowed to the rate while a classmate behind
    the same address still gets a turn within `max_wait`; only a caller whose
    turn would come later than that is refused (with when to retry).
    """

    def __init__(self, burst: int, per_second: float, max_wait: float = MAX_JOIN_WAIT,
                 max_keys: int = 50_000):
        self.burst, self.interval, self.max_wait, self.max_keys = burst, 1.0 / per_second, max_wait, max_keys
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}  # the time the key's next turn starts

    def turn(self, key: str) -> float | None:
        """Seconds to wait for this caller's turn (reserved), or None when it is too far off."""
        now = time.monotonic()
        with self._lock:  # GCRA: the key's theoretical next turn, `burst` turns of slack
            tat = max(self._next.get(key, now), now)
            wait = max(0.0, tat - now - (self.burst - 1) * self.interval)
            if wait > self.max_wait:
                return None
            if len(self._next) >= self.max_keys:
                self._next = {k: t for k, t in self._next.items() if t > now}
            self._next[key] = tat + self.interval
            return wait

    def retry_after(self, key: str) -> float:
        with self._lock:
            tat = self._next.get(key, 0.0)
        return max(1.0, tat - time.monotonic() - (self.burst - 1) * self.interval - self.max_wait)


class BoundedExecutor:
    """A few threads of its own for blocking work, with a bounded queue: full means 429 at once."""

    def __init__(self, name: str, workers: int, max_waiting: int):
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix=f"attnp-{name}")
        self._free = threading.BoundedSemaphore(workers + max_waiting)

    async def run(self, fn: Callable[..., T], *args: Any, busy: str, retry: float = 2.0,
                  then: Callable[[], None] | None = None) -> T:
        """`fn(*args)` on these threads; `then()` once it has ended (or was refused), even if
        the asker went."""
        if not self._free.acquire(blocking=False):
            if then is not None:
                then()
            raise too_busy(busy, retry)
        try:
            future = self._pool.submit(fn, *args)
        except BaseException:
            self._free.release()
            if then is not None:
                then()
            raise

        def ended(_f: Any) -> None:
            self._free.release()
            if then is not None:
                then()

        future.add_done_callback(ended)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Limits:
    """One process's share of every bound (with several processes, each allows its share)."""

    secrets: RateLimiter = field(default_factory=lambda: Bucket(burst=10, per_second=0.2))
    # a whole lab behind one NAT joins at once; a flood from there is paced, 5 a second
    joins: Pacer = field(default_factory=lambda: Pacer(burst=200, per_second=5.0))
    checks: RateLimiter = field(default_factory=lambda: RateLimiter(burst=3, per_second=0.25))
    #: every learner write: saves, restores, resets, hints
    saves: RateLimiter = field(default_factory=lambda: RateLimiter(burst=40, per_second=2.0))
    widgets: Slots = field(default_factory=lambda: Slots(1))
    streams: Slots = field(default_factory=lambda: Slots(STREAMS_PER_LEARNER))
    browsers: Slots = field(default_factory=lambda: Slots(REQUESTS_PER_BROWSER))
    #: requests per browser and second, after a burst (a page dragging a slider sends ~10)
    requests: RateLimiter = field(default_factory=lambda: RateLimiter(burst=120, per_second=30.0))
    #: widget answers wait on the check workers: never on the server's shared thread pool
    widget_pool: BoundedExecutor = field(default_factory=lambda: BoundedExecutor("widget", 8, 64))
    #: scrypt for password sign-in: a flood of guesses costs at most these threads' CPU
    password_pool: BoundedExecutor = field(default_factory=lambda: BoundedExecutor("scrypt", 1, 4))
    max_learners: int = DEFAULT_MAX_LEARNERS

    async def admit_join(self, address: str, learners: Callable[[], int]) -> None:
        """Wait for this address's turn to join (a flood from it is slowed, not everyone there
        refused), then refuse only when the class is full (`learners()`: a store read)."""
        wait = self.joins.turn(address)
        if wait is None:
            raise too_busy("Many people are joining from your network right now: wait a moment "
                           "and send the form again.", self.joins.retry_after(address))
        if wait:
            await asyncio.sleep(wait)
        if await run_in_threadpool(learners) >= self.max_learners:
            raise Problem(403, f"This class is full ({self.max_learners} learners): ask your "
                               "instructor, who can raise `max_learners` in the course file.")

    async def widget(self, learner_id: str, compute: Callable[..., T], *args: Any) -> T:
        """A widget's `compute(*args)` on the widget threads, one per learner at a time: the
        learner's slot is held until the computation ends, not only while its asker waits."""
        if not self.widgets.enter(learner_id):
            raise too_busy("your previous widget is still being computed; it updates when that "
                           "one is done.", 1.0)
        return await self.widget_pool.run(
            compute, *args, then=lambda: self.widgets.leave(learner_id),
            busy="the widgets are busy for the whole class right now; try again in a moment.")

    async def password_ok(self, address: str, check: Callable[[], bool]) -> bool:
        """Run a costly password `check` (scrypt) only when `address` may try a secret now, and on
        the password thread: refused guesses cost nothing, a flood of them slows no one else."""
        waits = getattr(self.secrets, "wait", None)
        wait = waits(address) if waits is not None else 0.0
        if wait:
            raise too_busy(f"Too many attempts: wait {seconds(wait)} s.", wait)
        return await self.password_pool.run(check, busy="Many sign-ins are being checked right "
                                             "now: wait a moment and try again.")

    def close(self) -> None:
        self.widget_pool.close()
        self.password_pool.close()
