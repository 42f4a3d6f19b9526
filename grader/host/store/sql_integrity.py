"""Store methods for who is who: one learner per student id, refused claims, sessions.

Mixed into `sql.SqlStore` (same `_read` / `_write` primitives), kept apart
because they guard the grade's integrity rather than the lesson's data:

- A student id is held by one learner of the class. Its *key* (NFKC,
  case-folded, without spaces or invisible characters: "S 123", "s123" and
  "S\u200b123" are one id) sits in `learners.id_key` under a UNIQUE index;
  the claim is checked inside the write transaction (SQLite's single writer,
  PostgreSQL's class-wide write lock), so two joins racing for one id cannot
  both win. Learners from before this rule have no key: a claim is checked
  against their ids too, and their clashes are listed for the instructor.
- A session is a random token in a cookie, stored only as its SHA-256 hash,
  with its kind, its learner (none for the instructor) and an expiry; a
  learner keeps at most MAX_SESSIONS of them (the oldest ends first).
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from attn_practice.grader.host.store.base import (
    IdConflict,
    Learner,
    SessionKind,
    StudentIdTaken,
    new_id,
)

T = TypeVar("T")

#: Refused claims kept open at most (a flood of joins cannot grow the table without bound).
MAX_OPEN_CONFLICTS = 500
#: Live sessions kept per learner, and for the instructor; a new one past that ends the oldest
#: (a script signing in again and again cannot grow the table either).
MAX_SESSIONS = {SessionKind.LEARNER: 20, SessionKind.INSTRUCTOR: 50}

HOLDER_BY_KEY = "SELECT id FROM learners WHERE id_key = ?"
UNKEYED_IDS = "SELECT id, student_id FROM learners WHERE id_key IS NULL AND student_id <> ''"
SET_ID = "UPDATE learners SET student_id = ?, id_key = ? WHERE id = ?"
OPEN_CONFLICTS = ("SELECT id, student_id, display_name, holder_id, created FROM id_conflicts "
                  "WHERE settled IS NULL ORDER BY created, id")
COUNT_OPEN = "SELECT COUNT(*) FROM id_conflicts WHERE settled IS NULL"
SAME_OPEN = ("SELECT 1 FROM id_conflicts WHERE settled IS NULL AND student_id = ? AND display_name = ? "
             "AND holder_id = ?")
INSERT_CONFLICT = ("INSERT INTO id_conflicts (id, student_id, display_name, holder_id, created) "
                   "VALUES (?, ?, ?, ?, ?)")
SETTLE = "UPDATE id_conflicts SET settled = ? WHERE id = ? AND settled IS NULL RETURNING id"
INSERT_SESSION = ("INSERT INTO sessions (token_hash, kind, learner_id, created, expires) "
                  "VALUES (?, ?, ?, ?, ?)")
DROP_EXPIRED = "DELETE FROM sessions WHERE expires < ?"
DROP_OLDEST = ("DELETE FROM sessions WHERE kind = ? AND learner_id = ? AND token_hash NOT IN "
               "(SELECT token_hash FROM sessions WHERE kind = ? AND learner_id = ? "
               "ORDER BY created DESC, token_hash LIMIT ?)")
SESSION_LEARNER = ("SELECT l.id, l.display_name, l.student_id, l.created FROM sessions s "
                   "JOIN learners l ON l.id = s.learner_id "
                   "WHERE s.token_hash = ? AND s.kind = ? AND s.expires > ?")
SESSION_ALIVE = "SELECT 1 FROM sessions WHERE token_hash = ? AND kind = ? AND expires > ?"
END_SESSION = "DELETE FROM sessions WHERE token_hash = ?"
END_KIND = "DELETE FROM sessions WHERE kind = ? RETURNING token_hash"
END_OWNER = "DELETE FROM sessions WHERE kind = ? AND learner_id = ? RETURNING token_hash"


#: Letters of other scripts that look like Latin ones on the instructor's screen (after casefold).
LOOKALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ӏ": "l",
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "n",
    "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x",
    # dashes and minus signs read as the hyphen-minus of "s-100"
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u02d7\ufe58\u2796", "-")})
#: Dropped from the key: spaces, invisible and control characters, combining marks.
IGNORED = frozenset({"Cf", "Cc", "Mn", "Me", "Zs", "Zl", "Zp"})


def student_id_key(student_id: str) -> str:
    """The form two ids are compared in ("" for no id): two ids that read the same to the
    instructor (case, spaces, width, accents, invisible characters, look-alike letters of other
    scripts, other scripts' digits) are one id."""
    text = unicodedata.normalize("NFKD", student_id).casefold()
    kept = (str(unicodedata.decimal(c)) if unicodedata.decimal(c, None) is not None else c
            for c in text if not c.isspace() and unicodedata.category(c) not in IGNORED)
    return unicodedata.normalize("NFKC", "".join(kept)).translate(LOOKALIKES)


class Tx(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


def claim_student_id(tx: Tx, learner_id: str, student_id: str) -> None:
    """Give `learner_id` this id inside the caller's transaction, or raise StudentIdTaken."""
    key = student_id_key(student_id)
    if key:
        holders = [r[0] for r in tx.execute(HOLDER_BY_KEY, (key,))]
        holders += [r[0] for r in tx.execute(UNKEYED_IDS) if student_id_key(r[1]) == key]
        other = next((h for h in holders if h != learner_id), None)
        if other is not None:
            raise StudentIdTaken(student_id, other)
    tx.execute(SET_ID, (student_id, key or None, learner_id))


class IntegrityMethods:
    """The Store protocol's student-id and session methods (see the module docstring)."""

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _write(self, work: Callable[[Any], T]) -> T:
        raise NotImplementedError

    # -------------------------------------------------------------- student ids
    def set_student_id(self, learner_id: str, student_id: str) -> None:
        self._write(lambda tx: claim_student_id(tx, learner_id, student_id))

    def record_id_conflict(self, student_id: str, display_name: str, holder_id: str) -> bool:
        def record(tx: Any) -> bool:
            if tx.execute(SAME_OPEN, (student_id, display_name, holder_id)):
                return True
            if int(tx.execute(COUNT_OPEN)[0][0]) >= MAX_OPEN_CONFLICTS:
                return False
            tx.execute(INSERT_CONFLICT, (new_id(), student_id, display_name, holder_id, time.time()))
            return True

        return self._write(record)

    def id_conflicts(self) -> list[IdConflict]:
        return [IdConflict(r[0], r[1], r[2], r[3], float(r[4])) for r in self._read(OPEN_CONFLICTS)]

    def settle_id_conflict(self, conflict_id: str) -> bool:
        return bool(self._write(lambda tx: tx.execute(SETTLE, (time.time(), conflict_id))))

    # -------------------------------------------------------------- sessions
    def create_session(self, token_hash: str, kind: SessionKind, learner_id: str, expires: float) -> None:
        now = time.time()

        def create(tx: Any) -> None:
            tx.execute(DROP_EXPIRED, (now,))
            tx.execute(INSERT_SESSION, (token_hash, kind.value, learner_id, now, expires))
            tx.execute(DROP_OLDEST, (kind.value, learner_id, kind.value, learner_id, MAX_SESSIONS[kind]))

        self._write(create)

    def session_learner(self, token_hash: str) -> Learner | None:
        rows = self._read(SESSION_LEARNER, (token_hash, SessionKind.LEARNER.value, time.time()))
        return Learner(rows[0][0], rows[0][1], rows[0][2], float(rows[0][3])) if rows else None

    def session_alive(self, token_hash: str, kind: SessionKind) -> bool:
        return bool(self._read(SESSION_ALIVE, (token_hash, kind.value, time.time())))

    def end_session(self, token_hash: str) -> None:
        self._write(lambda tx: tx.execute(END_SESSION, (token_hash,)))

    def end_sessions(self, kind: SessionKind, learner_id: str | None = None) -> int:
        if learner_id is None:
            return len(self._write(lambda tx: tx.execute(END_KIND, (kind.value,))))
        return len(self._write(lambda tx: tx.execute(END_OWNER, (kind.value, learner_id))))
