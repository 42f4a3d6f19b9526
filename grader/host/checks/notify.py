"""Telling waiting learners where their check stands: on change, coalesced, not on a clock.

With 80 checks waiting, every check that starts moves everyone's place by
one; sending each of them an event each time (or every half second, as
before: 38,000 events in three minutes for 200 learners) costs the server
more than the news is worth. `QueueNotifier` wakes when the queue says it
changed, waits `NOTIFY_SECONDS` to gather whatever else changes, and passes
on only the places that moved enough to show: a check about to start
(within two rounds of the workers), a place that fell by a quarter since it
was last told, or one not told for `QUIET_SECONDS`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

NOTIFY_SECONDS = 1.0
QUIET_SECONDS = 10.0
#: learner id -> (step, position); position 0: running
Changes = dict[str, tuple[str, int]]


def worth_telling(before: tuple[str, int] | None, now: tuple[str, int], told_ago: float,
                  near: int) -> bool:
    """Whether a learner's place moved enough since they were last told."""
    if before is None or before[0] != now[0]:
        return True
    old, new = before[1], now[1]
    if new == old:
        return False
    return new <= near or new <= 0.75 * old or told_ago >= QUIET_SECONDS


class QueueNotifier:
    def __init__(self, snapshot: Callable[[], Changes], on_change: Callable[[Changes], None],
                 near: int = 4):
        self.snapshot = snapshot
        self.on_change = on_change
        self.near = near
        self.sent = 0  # events handed on (tests and benches count them)
        self._told: dict[str, tuple[tuple[str, int], float]] = {}
        self._poked = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="attnp-queue-notify", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._poked.set()

    def flush(self) -> Changes:
        """Compare the queue with what each learner was told; hand on what is worth it."""
        now = time.monotonic()
        current = self.snapshot()
        out: Changes = {}
        for who, place in current.items():
            before = self._told.get(who)
            if worth_telling(before[0] if before else None, place, now - (before[1] if before else 0),
                             self.near):
                out[who] = place
                self._told[who] = (place, now)
        for who in [w for w in self._told if w not in current]:
            del self._told[who]  # done: their request answers them itself
        if out:
            self.sent += len(out)
            try:
                self.on_change(out)
            except Exception:  # noqa: BLE001 - a page missing a place never stops the queue
                pass
        return out

    def _run(self) -> None:
        while not self._closed:
            self._poked.wait()
            if self._closed:
                return
            time.sleep(NOTIFY_SECONDS)  # gather what else changes meanwhile
            self._poked.clear()
            self.flush()

    def close(self) -> None:
        self._closed = True
        self._poked.set()
