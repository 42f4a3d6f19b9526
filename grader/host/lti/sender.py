"""The score outbox's sender: one thread per host process, posting queued scores in order.

Every `TICK` it (1) queues the scores of linked learners whose reports
changed (a poll of the reports saved lately, so every way a report is saved,
including a check re-run after a restart, moves the gradebook), and (2)
posts the due scores, the oldest unsent one of each link first, each leased
so another process does not post it at once. A refused post stays queued
with the platform's answer and is retried after a growing wait (2 s, 4 s,
... at most `MAX_WAIT`; all at once when one of them gets through); the
wait is in the database, so it holds across a restart. On start, every linked learner is synced once (a report saved just
before a crash is not missed).
"""

from __future__ import annotations

import random
import sys
import threading
import time
from typing import Any

from attn_practice.grader.host.lti import ags
from attn_practice.grader.host.lti.http import PlatformError
from attn_practice.grader.host.store.base import StoreUnavailable

TICK = 1.0
LEASE = 30.0
MAX_WAIT = 30.0
#: reports saved this long before the last poll are looked at again (commits land late)
OVERLAP = 30.0
WARN_EVERY = 60.0


def backoff(attempts: int) -> float:
    return min(MAX_WAIT, 2.0 ** min(attempts + 1, 10)) * random.uniform(0.8, 1.0)


class Sender:
    def __init__(self, store: Any, course: Any):
        self.store, self.course = store, course
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attnp-lti-sender", daemon=True)
        self._since = 0.0
        self._warned = -WARN_EVERY

    def start(self) -> Sender:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                if first:
                    for lid in self.store.lti_linked_learners():
                        ags.sync_learner(self.store, self.course, lid)
                    first = False
                self.sync_recent()
                self.deliver()
            except StoreUnavailable:
                pass  # the database is away: the queue waits in it
            except Exception as exc:  # noqa: BLE001 - the sender must outlive any one bad row
                self._warn(f"{type(exc).__name__}: {exc}")
            self._stop.wait(TICK)

    def _warn(self, what: str) -> None:
        """One line on stderr, at most once a minute (the terminal stays readable, CONTRACT §7.1)."""
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            print(f"attn-practice host: the LMS score sender failed ({what}); scores stay queued. "
                  "This is a bug in attn-practice.", file=sys.stderr)

    def sync_recent(self) -> None:
        now = time.time()
        for lid in self.store.lti_recently_checked(self._since - OVERLAP):
            ags.sync_learner(self.store, self.course, lid)
        self._since = now

    def deliver(self) -> int:
        sent = 0
        for score in self.store.due_lti_scores():
            if self._stop.is_set():
                break
            if not self.store.lease_lti_score(score.id, LEASE):
                continue
            try:
                answer = ags.post_score(self.store, score)
            except PlatformError as exc:
                self.store.lti_score_failed(score.id, str(exc), time.time() + backoff(score.attempts))
                continue
            self.store.lti_score_sent(score.id, answer)
            if score.attempts and not sent:
                self.store.retry_failing_lti_scores()  # it answers again: the others need not wait
            sent += 1
        return sent
