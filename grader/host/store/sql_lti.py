"""Store methods for LTI 1.3 (CONTRACT §8): who a platform's user is, nonces, links, the score outbox.

Mixed into `sql.SqlStore` (same `_read` / `_write` primitives), kept apart
because only `grader.host.lti` uses them:

- A learner is the pair (issuer, sub): `lti_learner` maps it to the one
  learner row, created in the same transaction as the mapping, so two first
  launches racing (two browsers) still make one learner.
- A login nonce is stored with the hash of the state it was issued with and
  an expiry; `use_lti_nonce` spends it at most once (an UPDATE that only a
  fresh, unused row satisfies).
- A link is where a learner's score goes (a launch's AGS claim); a context is
  a course whose roster may be imported.
- The outbox holds every score to post, in order per link; a row is `pending`
  until the platform acknowledges it (`sent`) and `failing` (with the
  platform's answer) while it refuses; a sender leases a row before posting
  so two processes do not post it at once.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar

from attn_practice.grader.host.store.base import Learner, new_id

T = TypeVar("T")


class ScoreState(str, enum.Enum):
    PENDING = "pending"
    SENT = "sent"
    FAILING = "failing"


@dataclass(frozen=True)
class LtiLink:
    """One learner's launch from one resource link: where their score is posted."""

    id: str
    learner_id: str
    issuer: str
    client_id: str
    sub: str
    context_id: str
    resource_link_id: str
    lineitem: str
    lineitems: str
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class LtiContext:
    issuer: str
    client_id: str
    context_id: str
    title: str
    memberships_url: str


@dataclass(frozen=True)
class OutboxScore:
    id: int
    link_id: str
    learner_id: str
    score_given: float
    score_max: float
    completed: bool
    stamp: str
    state: ScoreState
    attempts: int
    next_try: float
    answer: str
    created: float
    sent: float | None


LEARNER_OF = "SELECT learner_id FROM lti_learners WHERE issuer = ? AND sub = ?"
MAP_LEARNER = "INSERT INTO lti_learners (issuer, sub, learner_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
NEW_LEARNER = ("INSERT INTO learners (id, display_name, student_id, resume_hash, created) "
               "VALUES (?, ?, ?, ?, ?)")
LEARNER_ROW = "SELECT id, display_name, student_id, created FROM learners WHERE id = ?"
LINKED_LEARNERS = "SELECT DISTINCT learner_id FROM lti_links"
RECENTLY_CHECKED = ("SELECT DISTINCT learner_id FROM reports WHERE created > ? AND learner_id IN "
                    "(SELECT learner_id FROM lti_links)")

ADD_NONCE = "INSERT INTO lti_nonces (nonce, state_hash, expires, used) VALUES (?, ?, ?, 0)"
DROP_OLD_NONCES = "DELETE FROM lti_nonces WHERE expires < ?"
USE_NONCE = ("UPDATE lti_nonces SET used = 1 WHERE nonce = ? AND state_hash = ? AND used = 0 "
             "AND expires >= ? RETURNING nonce")
NONCE_ROW = "SELECT state_hash, expires, used FROM lti_nonces WHERE nonce = ?"

LINK_COLS = ("id, learner_id, issuer, client_id, sub, context_id, resource_link_id, lineitem, "
             "lineitems, scopes")
UPSERT_LINK = (f"INSERT INTO lti_links ({LINK_COLS}, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (learner_id, issuer, client_id, context_id, resource_link_id) DO UPDATE SET "
               "sub = excluded.sub, lineitem = CASE WHEN excluded.lineitem <> '' THEN excluded.lineitem "
               "ELSE lti_links.lineitem END, lineitems = excluded.lineitems, scopes = excluded.scopes, "
               "updated = excluded.updated")
LINKS_OF = f"SELECT {LINK_COLS} FROM lti_links WHERE learner_id = ? ORDER BY updated"
LINK_BY_ID = f"SELECT {LINK_COLS} FROM lti_links WHERE id = ?"
SET_LINEITEM = ("UPDATE lti_links SET lineitem = ? WHERE issuer = ? AND client_id = ? AND context_id = ? "
                "AND resource_link_id = ? AND lineitem = ''")

UPSERT_CONTEXT = ("INSERT INTO lti_contexts (issuer, client_id, context_id, title, memberships_url, "
                  "updated) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (issuer, client_id, context_id) DO UPDATE "
                  "SET title = excluded.title, memberships_url = CASE WHEN excluded.memberships_url <> '' "
                  "THEN excluded.memberships_url ELSE lti_contexts.memberships_url END, "
                  "updated = excluded.updated")
CONTEXTS = ("SELECT issuer, client_id, context_id, title, memberships_url FROM lti_contexts "
            "ORDER BY updated DESC")

SCORE_COLS = ("id, link_id, learner_id, score_given, score_max, completed, stamp, state, attempts, "
              "next_try, answer, created, sent")
LAST_SCORE = f"SELECT {SCORE_COLS}, ts FROM lti_scores WHERE link_id = ? ORDER BY id DESC LIMIT 1"
ADD_SCORE = ("INSERT INTO lti_scores (link_id, learner_id, score_given, score_max, completed, stamp, ts, "
             "state, attempts, next_try, lease, answer, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, '', ?)")
#: the oldest unsent score of each link, when due: a link's scores go out strictly in order
DUE_SCORES = (f"SELECT {SCORE_COLS} FROM lti_scores s WHERE state <> 'sent' AND next_try <= ? AND lease < ? "
              "AND id = (SELECT MIN(id) FROM lti_scores t WHERE t.link_id = s.link_id AND t.state <> 'sent') "
              "ORDER BY id LIMIT ?")
LEASE_SCORE = "UPDATE lti_scores SET lease = ? WHERE id = ? AND lease < ? AND state <> 'sent' RETURNING id"
SCORE_SENT = "UPDATE lti_scores SET state = 'sent', sent = ?, answer = ?, lease = 0 WHERE id = ?"
SCORE_FAILED = ("UPDATE lti_scores SET state = 'failing', attempts = attempts + 1, next_try = ?, answer = ?, "
                "lease = 0 WHERE id = ?")
RETRY_FAILING_NOW = "UPDATE lti_scores SET next_try = ? WHERE state = 'failing' AND next_try > ?"
SCORE_COUNTS = "SELECT state, COUNT(*) FROM lti_scores GROUP BY state"
UNSENT_SCORES = f"SELECT {SCORE_COLS} FROM lti_scores WHERE state <> 'sent' ORDER BY id LIMIT ?"
RECENT_SENT = f"SELECT {SCORE_COLS} FROM lti_scores WHERE state = 'sent' ORDER BY sent DESC LIMIT ?"


class _Tx(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


def _link(r: Sequence[Any]) -> LtiLink:
    return LtiLink(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], tuple(json.loads(r[9])))


def _score(r: Sequence[Any]) -> OutboxScore:
    return OutboxScore(int(r[0]), r[1], r[2], float(r[3]), float(r[4]), bool(r[5]), r[6], ScoreState(r[7]),
                       int(r[8]), float(r[9]), r[10], float(r[11]), None if r[12] is None else float(r[12]))


def iso_stamp(ts: float) -> str:
    """ISO 8601 with microseconds and a zone, as AGS's `timestamp` wants it."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="microseconds")


class LtiMethods:
    """The LTI half of the store; `_read` / `_write` are SqlStore's."""

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _write(self, work: Callable[[_Tx], T]) -> T:
        raise NotImplementedError

    # -------------------------------------------------------------- learners by (issuer, sub)
    def lti_learner(self, issuer: str, sub: str) -> Learner | None:
        rows = self._read(LEARNER_OF, (issuer, sub))
        if not rows:
            return None
        got = self._read(LEARNER_ROW, (rows[0][0],))
        return Learner(got[0][0], got[0][1], got[0][2], float(got[0][3])) if got else None

    def lti_learner_or_create(self, issuer: str, sub: str, display_name: str, student_id: str,
                              resume_hash: str) -> tuple[Learner, bool]:
        """The learner of (issuer, sub), created (with this name) on the first launch; (learner, new)."""
        def work(tx: _Tx) -> tuple[str, bool]:
            have = tx.execute(LEARNER_OF, (issuer, sub))
            if have:
                return str(have[0][0]), False
            lid = new_id()
            tx.execute(MAP_LEARNER, (issuer, sub, lid))
            tx.execute(NEW_LEARNER, (lid, display_name, student_id, resume_hash, time.time()))
            return lid, True

        lid, created = self._write(work)
        got = self._read(LEARNER_ROW, (lid,))[0]
        return Learner(got[0], got[1], got[2], float(got[3])), created

    def lti_linked_learners(self) -> list[str]:
        return [r[0] for r in self._read(LINKED_LEARNERS)]

    # -------------------------------------------------------------- nonces
    def add_lti_nonce(self, nonce: str, state_hash: str, expires: float) -> None:
        def work(tx: _Tx) -> None:
            tx.execute(DROP_OLD_NONCES, (time.time() - 60,))
            tx.execute(ADD_NONCE, (nonce, state_hash, expires))

        self._write(work)

    def lti_nonce_used(self, nonce: str) -> bool:
        """Whether this nonce was issued here and already spent (a replayed launch)."""
        rows = self._read(NONCE_ROW, (nonce,))
        return bool(rows) and bool(int(rows[0][2]))

    def use_lti_nonce(self, nonce: str, state_hash: str) -> str:
        """'' when spent now; else why not: 'unknown', 'used', 'expired' or 'state'."""
        def work(tx: _Tx) -> str:
            if tx.execute(USE_NONCE, (nonce, state_hash, time.time())):
                return ""
            row = tx.execute(NONCE_ROW, (nonce,))
            if not row:
                return "unknown"
            if int(row[0][2]):
                return "used"
            if float(row[0][1]) < time.time():
                return "expired"
            return "state"

        return self._write(work)

    # -------------------------------------------------------------- links and contexts
    def save_lti_link(self, learner_id: str, issuer: str, client_id: str, sub: str, context_id: str,
                      resource_link_id: str, lineitem: str, lineitems: str,
                      scopes: Sequence[str]) -> LtiLink:
        def work(tx: _Tx) -> LtiLink:
            tx.execute(UPSERT_LINK, (new_id(), learner_id, issuer, client_id, sub, context_id,
                                     resource_link_id, lineitem, lineitems, json.dumps(list(scopes)),
                                     time.time()))
            rows = tx.execute(f"SELECT {LINK_COLS} FROM lti_links WHERE learner_id = ? AND issuer = ? AND "
                              "client_id = ? AND context_id = ? AND resource_link_id = ?",
                              (learner_id, issuer, client_id, context_id, resource_link_id))
            return _link(rows[0])

        return self._write(work)

    def lti_links(self, learner_id: str) -> list[LtiLink]:
        return [_link(r) for r in self._read(LINKS_OF, (learner_id,))]

    def lti_link(self, link_id: str) -> LtiLink | None:
        rows = self._read(LINK_BY_ID, (link_id,))
        return _link(rows[0]) if rows else None

    def set_lti_lineitem(self, link: LtiLink, lineitem: str) -> None:
        """The line item created for a resource link, given to every learner's link of it."""
        self._write(lambda tx: tx.execute(SET_LINEITEM, (lineitem, link.issuer, link.client_id,
                                                         link.context_id, link.resource_link_id)))

    def save_lti_context(self, issuer: str, client_id: str, context_id: str, title: str,
                         memberships_url: str) -> None:
        self._write(lambda tx: tx.execute(UPSERT_CONTEXT, (issuer, client_id, context_id, title,
                                                           memberships_url, time.time())))

    def lti_contexts(self) -> list[LtiContext]:
        return [LtiContext(*r) for r in self._read(CONTEXTS)]

    # -------------------------------------------------------------- the score outbox
    def enqueue_lti_score(self, link_id: str, learner_id: str, given: float, maximum: float,
                          completed: bool, *, only_if_changed: bool = True) -> int | None:
        """Queue a score for the link: its outbox id (None when it equals the last one queued).

        Its timestamp is strictly after the link's previous one (by at least a microsecond),
        whatever the clock did: AGS platforms drop a score not newer than the last.
        """
        def work(tx: _Tx) -> int | None:
            last = tx.execute(LAST_SCORE, (link_id,))
            now = time.time()
            if last:
                prev = _score(last[0])
                if only_if_changed and (prev.score_given, prev.score_max, prev.completed) == (
                        given, maximum, completed):
                    return None
                now = max(now, float(last[0][13]) + 1e-6)
            elif only_if_changed and given == 0:
                return None  # nothing to tell the gradebook yet
            now = round(now, 6)
            tx.execute(ADD_SCORE, (link_id, learner_id, given, maximum, int(completed), iso_stamp(now), now,
                                   ScoreState.PENDING.value, 0.0, time.time()))
            return int(tx.execute(LAST_SCORE, (link_id,))[0][0])

        return self._write(work)

    def due_lti_scores(self, limit: int = 50) -> list[OutboxScore]:
        now = time.time()
        return [_score(r) for r in self._read(DUE_SCORES, (now, now, limit))]

    def lease_lti_score(self, score_id: int, seconds: float) -> bool:
        now = time.time()
        return bool(self._write(lambda tx: tx.execute(LEASE_SCORE, (now + seconds, score_id, now))))

    def lti_score_sent(self, score_id: int, answer: str) -> None:
        self._write(lambda tx: tx.execute(SCORE_SENT, (time.time(), answer[:500], score_id)))

    def retry_failing_lti_scores(self) -> None:
        """A platform answered again: every failing score is due now (not at its backed-off time)."""
        now = time.time()
        self._write(lambda tx: tx.execute(RETRY_FAILING_NOW, (now, now)))

    def lti_score_failed(self, score_id: int, answer: str, next_try: float) -> None:
        self._write(lambda tx: tx.execute(SCORE_FAILED, (next_try, answer[:500], score_id)))

    def lti_score_counts(self) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in self._read(SCORE_COUNTS)}

    def unsent_lti_scores(self, limit: int = 100) -> list[OutboxScore]:
        return [_score(r) for r in self._read(UNSENT_SCORES, (limit,))]

    def recent_sent_lti_scores(self, limit: int = 20) -> list[OutboxScore]:
        return [_score(r) for r in self._read(RECENT_SENT, (limit,))]

    def lti_recently_checked(self, since: float) -> list[str]:
        """Learners with a launch link and a report saved after `since` (the sender's poll)."""
        return [r[0] for r in self._read(RECENTLY_CHECKED, (since,))]
