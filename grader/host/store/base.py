"""The class's state behind named methods: the views never see a cursor or a dialect.

Every id that reaches a URL is a random token (`new_id`), never a sequential
integer, so a learner cannot guess another's. Rows are frozen dataclasses.
A write method returns only after its transaction committed: "saved" on the
page means on disk (or in PostgreSQL).

Two implementations: `sqlite.SQLiteStore` (the default, one file in the
class's data folder) and `postgres.PostgresStore` (several server processes,
one class). Both get their logic from `sql.SqlStore`; they differ only in how a
statement reaches the database.
"""

from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: Bytes of randomness in ids that appear in URLs (learner, version, report ids).
ID_BYTES = 16


def new_id() -> str:
    """A random, URL-safe id (128 bits): unguessable, so never an authorisation by itself."""
    return secrets.token_urlsafe(ID_BYTES)


class StoreUnavailable(Exception):
    """The database is away (connection lost, pool exhausted): answer 503 and retry later."""

    def __init__(self, message: str = "the class database is not reachable", retry_after: float = 2.0):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Learner:
    id: str
    display_name: str
    student_id: str
    created: float


@dataclass(frozen=True)
class Version:
    """One stored save of one step file: a new row each time, never updated."""

    id: str
    learner_id: str
    step: str
    content: str
    created: float


@dataclass(frozen=True)
class ReportRow:
    """One finished check: `report` is the engine's plain-data GradeReport (to_dict)."""

    id: str
    learner_id: str
    step: str
    version_id: str
    status: str
    passed: bool
    diagnoses: tuple[str, ...]
    report: dict[str, Any]
    created: float


@dataclass(frozen=True)
class StandingRow:
    """The latest report of one learner on one step, without the report itself (the live grid)."""

    learner_id: str
    step: str
    status: str
    passed: bool
    version_id: str
    diagnoses: tuple[str, ...]
    created: float


@dataclass(frozen=True)
class StepProgress:
    """A learner's standing on one step beyond its reports: hints shown, first opened, checks run."""

    learner_id: str
    step: str
    hints: int
    started: float
    checks: int


@dataclass(frozen=True)
class Event:
    """Something the live views show (a save, a check, a join); `id` orders them, the cursor."""

    id: int
    learner_id: str
    kind: str
    data: dict[str, Any]
    created: float


class SessionKind(str, enum.Enum):
    """Who a session signs in: a learner (their workspace) or the instructor (the class)."""

    LEARNER = "learner"
    INSTRUCTOR = "instructor"


class StudentIdTaken(Exception):
    """A student id another learner of the class holds: refused, never shared (issue 35 item 4)."""

    def __init__(self, student_id: str, holder_id: str):
        super().__init__(f"student id {student_id!r} is held by another learner")
        self.student_id, self.holder_id = student_id, holder_id


@dataclass(frozen=True)
class IdConflict:
    """A refused claim of a student id that another learner holds, for the instructor to settle."""

    id: str
    student_id: str
    display_name: str
    holder_id: str
    created: float


@runtime_checkable
class Store(Protocol):
    """What the host needs from a database. Implementations: sql.SqlStore's subclasses."""

    # lifecycle
    def migrate(self) -> None:
        """Bring the schema forward to schema.MIGRATIONS (idempotent; run on every start)."""

    def close(self) -> None: ...

    def ping(self) -> bool:
        """True when reads and writes work now (raises StoreUnavailable or returns False if not)."""

    # learners
    def create_learner(self, display_name: str, student_id: str, resume_hash: str) -> Learner: ...

    def learner(self, learner_id: str) -> Learner | None: ...

    def learner_by_resume_hash(self, resume_hash: str) -> Learner | None: ...

    def learners(self) -> list[Learner]: ...

    def learner_count(self) -> int:
        """How many have joined (each join asks: reading every learner made 200 joins quadratic)."""
        ...

    def reissue_resume(self, learner_id: str, new_hash: str) -> bool: ...

    # versions
    def save_version(self, learner_id: str, step: str, content: str) -> Version:
        """Store a new version; returns only once it is committed."""

    def versions(self, learner_id: str, step: str, limit: int = 100) -> list[Version]:
        """The learner's versions of `step`, newest first."""

    def version(self, learner_id: str, version_id: str) -> Version | None:
        """One version, only if it is this learner's (scoped: another learner's id gives None)."""

    def learner_bytes(self, learner_id: str) -> int:
        """Characters stored in all the learner's versions (the quota's measure)."""

    def latest_files(self, learner_id: str) -> dict[str, Version]:
        """step -> the newest version of each step the learner saved."""

    def latest_version_ids(self) -> dict[tuple[str, str], str]:
        """(learner id, step) -> the newest version's id, for the whole class (the live grid)."""

    # reports
    def save_report(self, learner_id: str, step: str, version_id: str,
                    report: dict[str, Any]) -> ReportRow: ...

    def latest_report(self, learner_id: str, step: str) -> ReportRow | None: ...

    def latest_reports(self) -> list[ReportRow]:
        """The newest report of every learner on every step they checked."""

    def class_standings(self) -> list[StandingRow]:
        """As latest_reports, without the reports' bodies (cheap enough to redraw a live grid)."""

    def latest_standings(self, learner_id: str) -> dict[str, tuple[str, bool, str]]:
        """step -> (status, passed, version id) of the latest report of each step checked."""

    def report_history(self, learner_id: str | None = None) -> list[StandingRow]:
        """Every check of the class, or of one learner (no report bodies), per learner, oldest
        first: the export's history, a drill-down's results."""

    def passed_steps(self, learner_id: str) -> set[str]:
        """Steps the learner passed at least once."""

    # progress beyond reports
    def progress(self, learner_id: str | None = None) -> list[StepProgress]: ...

    def open_step(self, learner_id: str, step: str) -> StepProgress:
        """Note that the learner opened `step` (its `started` time is kept from the first call)."""

    def reveal_hint(self, learner_id: str, step: str, total: int) -> int:
        """One more hint shown (at most `total`); returns how many are shown now."""

    # live events (several processes poll the same table)
    def record_event(self, learner_id: str, kind: str, data: dict[str, Any]) -> int: ...

    def events_since(self, cursor: int, limit: int = 500) -> tuple[list[Event], int]:
        """Events after `cursor` in order, and the cursor to pass next time."""

    def last_event_id(self) -> int: ...

    # student ids: one learner each (create_learner raises StudentIdTaken too)
    def set_student_id(self, learner_id: str, student_id: str) -> None:
        """Give the learner this id ("" clears it); StudentIdTaken when another learner holds it."""

    def record_id_conflict(self, student_id: str, display_name: str, holder_id: str) -> bool:
        """Keep a refused claim for the instructor (False when too many are open already)."""

    def id_conflicts(self) -> list[IdConflict]:
        """The refused claims not yet settled, oldest first."""

    def settle_id_conflict(self, conflict_id: str) -> bool: ...

    # sessions: the cookie's token is stored only as a hash
    def create_session(self, token_hash: str, kind: SessionKind, learner_id: str, expires: float) -> None: ...

    def session_learner(self, token_hash: str) -> Learner | None:
        """The learner of a live learner session (None when unknown, ended or expired)."""

    def session_alive(self, token_hash: str, kind: SessionKind) -> bool: ...

    def end_session(self, token_hash: str) -> None: ...

    def end_sessions(self, kind: SessionKind, learner_id: str | None = None) -> int:
        """End every session of a kind (of one learner when given); returns how many ended."""

    # class settings
    def get_setting(self, key: str) -> str | None: ...

    def set_setting(self, key: str, value: str) -> None: ...

    def setting_or_set(self, key: str, value: str) -> str:
        """The value, or `value` stored first when there is none (atomic across processes)."""
