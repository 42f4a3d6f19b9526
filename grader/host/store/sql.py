"""Every Store method, written once over two primitives: a read and a write transaction.

`SqlStore` holds the logic (which statements, in which transaction, how rows
become dataclasses); a subclass says only how a statement reaches its
database:

- `_read(sql, params) -> list[tuple]`: one statement outside any write;
- `_write(work) -> T`: run `work(tx)` in ONE transaction and commit before
  returning; `tx.execute(sql, params) -> list[tuple]` (rows, or [] when the
  statement returns none).

Statements are schema.py's, with `?` placeholders; a subclass converts them
when its driver wants another style.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from attn_practice.grader.host.store import schema as q
from attn_practice.grader.host.store.base import (
    Event,
    Learner,
    ReportRow,
    StandingRow,
    StepProgress,
    Version,
    new_id,
)
from attn_practice.grader.host.store.sql_integrity import IntegrityMethods, claim_student_id
from attn_practice.grader.host.store.sql_lti import LtiMethods

T = TypeVar("T")

#: UTF-8 bytes of a learner's versions (LENGTH counts characters in both databases)
LEARNER_BYTES = {
    q.Dialect.SQLITE: "SELECT COALESCE(SUM(LENGTH(CAST(content AS BLOB))), 0) FROM versions WHERE learner_id = ?",
    q.Dialect.POSTGRES: "SELECT COALESCE(SUM(OCTET_LENGTH(content)), 0) FROM versions WHERE learner_id = ?",
}
REPORT_HISTORY = ("SELECT learner_id, step, status, passed, version_id, diagnoses, created FROM reports "
                  "ORDER BY learner_id, created, seq")
REPORT_HISTORY_OF = ("SELECT learner_id, step, status, passed, version_id, diagnoses, created FROM reports "
                     "WHERE learner_id = ? ORDER BY created, seq")


class Tx(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


def _learner(row: Sequence[Any]) -> Learner:
    return Learner(id=row[0], display_name=row[1], student_id=row[2], created=float(row[3]))


def _version(row: Sequence[Any]) -> Version:
    return Version(id=row[0], learner_id=row[1], step=row[2], content=row[3], created=float(row[4]))


def _report(row: Sequence[Any]) -> ReportRow:
    return ReportRow(id=row[0], learner_id=row[1], step=row[2], version_id=row[3], status=row[4],
                     passed=bool(row[5]), diagnoses=tuple(json.loads(row[6])),
                     report=json.loads(row[7]), created=float(row[8]))


def _progress(row: Sequence[Any]) -> StepProgress:
    return StepProgress(learner_id=row[0], step=row[1], hints=int(row[2]), started=float(row[3]),
                        checks=int(row[4]))


class SqlStore(IntegrityMethods, LtiMethods):
    """The Store protocol's methods; subclasses provide `_read`, `_write`, `dialect`, `close`."""

    dialect: q.Dialect

    # -------------------------------------------------------------- primitives
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _write(self, work: Callable[[Tx], T]) -> T:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -------------------------------------------------------------- lifecycle
    def migrate(self) -> None:
        def forward(tx: Tx) -> None:
            tx.execute(q.SCHEMA_VERSION_TABLE)
            have = tx.execute(q.GET_SCHEMA_VERSION)[0][0] or 0
            for n in range(int(have) + 1, len(q.MIGRATIONS) + 1):
                for statement in q.MIGRATIONS[n - 1]:
                    tx.execute(q.ddl(statement, self.dialect))
                tx.execute(q.SET_SCHEMA_VERSION, (n,))

        self._write(forward)

    def schema_version(self) -> int:
        return int(self._read(q.GET_SCHEMA_VERSION)[0][0] or 0)

    def ping(self) -> bool:
        return self._read(q.PING)[0][0] == 1

    # -------------------------------------------------------------- learners
    def create_learner(self, display_name: str, student_id: str, resume_hash: str) -> Learner:
        """A new learner; StudentIdTaken (nothing stored) when another learner holds the id."""
        learner = Learner(new_id(), display_name, student_id, time.time())

        def insert(tx: Tx) -> None:
            tx.execute(q.INSERT_LEARNER, (learner.id, display_name, "", resume_hash, learner.created))
            claim_student_id(tx, learner.id, student_id)

        self._write(insert)
        return learner

    def learner(self, learner_id: str) -> Learner | None:
        rows = self._read(q.LEARNER_BY_ID, (learner_id,))
        return _learner(rows[0]) if rows else None

    def learner_by_resume_hash(self, resume_hash: str) -> Learner | None:
        rows = self._read(q.LEARNER_BY_HASH, (resume_hash,))
        return _learner(rows[0]) if rows else None

    def learners(self) -> list[Learner]:
        return [_learner(r) for r in self._read(q.ALL_LEARNERS)]

    def learner_count(self) -> int:
        return int(self._read(q.COUNT_LEARNERS)[0][0])

    def reissue_resume(self, learner_id: str, new_hash: str) -> bool:
        if self.learner(learner_id) is None:
            return False
        self._write(lambda tx: tx.execute(q.SET_RESUME_HASH, (new_hash, learner_id)))
        return True

    # -------------------------------------------------------------- versions
    def save_version(self, learner_id: str, step: str, content: str) -> Version:
        version = Version(new_id(), learner_id, step, content, time.time())

        def insert(tx: Tx) -> None:
            seq = tx.execute(q.NEXT_VERSION_SEQ, (learner_id, step))[0][0]
            tx.execute(q.INSERT_VERSION, (version.id, learner_id, step, content, version.created, seq))

        self._write(insert)
        return version

    def versions(self, learner_id: str, step: str, limit: int = 100) -> list[Version]:
        return [_version(r) for r in self._read(q.VERSIONS_OF_STEP, (learner_id, step, limit))]

    def version(self, learner_id: str, version_id: str) -> Version | None:
        rows = self._read(q.VERSION_BY_ID, (learner_id, version_id))
        return _version(rows[0]) if rows else None

    def learner_bytes(self, learner_id: str) -> int:
        """How many bytes (UTF-8) the learner's versions hold, for the per-learner quota: counted
        in characters, 4-byte text would store four times the quota."""
        return int(self._read(LEARNER_BYTES[self.dialect], (learner_id,))[0][0])

    def latest_files(self, learner_id: str) -> dict[str, Version]:
        return {v.step: v for v in map(_version, self._read(q.LATEST_VERSIONS, (learner_id,)))}

    def latest_version_ids(self) -> dict[tuple[str, str], str]:
        """(learner id, step) -> the id of its newest version, for the whole class."""
        return {(r[0], r[1]): r[2] for r in self._read(q.ALL_LATEST_VERSION_IDS)}

    # -------------------------------------------------------------- reports
    def save_report(self, learner_id: str, step: str, version_id: str,
                    report: dict[str, Any]) -> ReportRow:
        steps = [s for s in report.get("steps", []) if s.get("id") == step]
        one = steps[0] if steps else {}
        status = str(one.get("status") or ("error" if report.get("error") else "missing"))
        diagnoses = tuple(str(d.get("id", d)) if isinstance(d, dict) else str(d)
                          for d in one.get("diagnoses", []))
        row = ReportRow(new_id(), learner_id, step, version_id, status, status == "passed",
                        diagnoses, report, time.time())

        def insert(tx: Tx) -> None:
            seq = tx.execute(q.NEXT_REPORT_SEQ, (learner_id, step))[0][0]
            tx.execute(q.INSERT_REPORT, (row.id, learner_id, step, version_id, status,
                                         int(row.passed), json.dumps(list(diagnoses)),
                                         json.dumps(report), row.created, seq))
            tx.execute(q.OPEN_STEP, (learner_id, step, row.created))
            tx.execute(q.COUNT_CHECK, (learner_id, step))

        self._write(insert)
        return row

    def latest_report(self, learner_id: str, step: str) -> ReportRow | None:
        rows = self._read(q.LATEST_REPORT, (learner_id, step))
        return _report(rows[0]) if rows else None

    def latest_reports(self) -> list[ReportRow]:
        return [_report(r) for r in self._read(q.LATEST_REPORTS)]

    def class_standings(self) -> list[StandingRow]:
        return [StandingRow(r[0], r[1], r[2], bool(r[3]), r[4], tuple(json.loads(r[5])), float(r[6]))
                for r in self._read(q.CLASS_STANDINGS)]

    def latest_standings(self, learner_id: str) -> dict[str, tuple[str, bool, str]]:
        """step -> (status, passed, version id) of the learner's latest report: no report parsed."""
        return {r[0]: (r[1], bool(r[2]), r[3])
                for r in self._read(q.LATEST_STANDINGS, (learner_id,))}

    def report_history(self, learner_id: str | None = None) -> list[StandingRow]:
        """Every check of the class (or of one learner: an indexed read, for a page at 200),
        without the reports' bodies: per learner, oldest first."""
        rows = (self._read(REPORT_HISTORY) if learner_id is None
                else self._read(REPORT_HISTORY_OF, (learner_id,)))
        return [StandingRow(r[0], r[1], r[2], bool(r[3]), r[4], tuple(json.loads(r[5])), float(r[6]))
                for r in rows]

    def passed_steps(self, learner_id: str) -> set[str]:
        """Steps the learner has passed at some check (the solution stays shown after that)."""
        return {r[0] for r in self._read(q.EVER_PASSED, (learner_id,))}

    # -------------------------------------------------------------- progress
    def progress(self, learner_id: str | None = None) -> list[StepProgress]:
        if learner_id is None:
            return [_progress(r) for r in self._read(q.ALL_PROGRESS)]
        return [_progress(r) for r in self._read(q.PROGRESS_OF_LEARNER, (learner_id,))]

    def open_step(self, learner_id: str, step: str) -> StepProgress:
        def open_(tx: Tx) -> StepProgress:
            tx.execute(q.OPEN_STEP, (learner_id, step, time.time()))
            return _progress(tx.execute(q.PROGRESS_OF, (learner_id, step))[0])

        return self._write(open_)

    def reveal_hint(self, learner_id: str, step: str, total: int) -> int:
        def reveal(tx: Tx) -> int:
            tx.execute(q.OPEN_STEP, (learner_id, step, time.time()))
            tx.execute(q.REVEAL_HINT, (learner_id, step, total))
            return int(tx.execute(q.PROGRESS_OF, (learner_id, step))[0][2])

        return self._write(reveal)

    # -------------------------------------------------------------- events
    def record_event(self, learner_id: str, kind: str, data: dict[str, Any]) -> int:
        payload = json.dumps(data)
        return int(self._write(lambda tx: tx.execute(
            q.INSERT_EVENT, (learner_id, kind, payload, time.time()))[0][0]))

    def events_since(self, cursor: int, limit: int = 500) -> tuple[list[Event], int]:
        rows = self._read(q.EVENTS_SINCE, (cursor, limit))
        events = [Event(int(r[0]), r[1], r[2], json.loads(r[3]), float(r[4])) for r in rows]
        return events, (events[-1].id if events else cursor)

    def last_event_id(self) -> int:
        return int(self._read(q.LAST_EVENT)[0][0])

    # -------------------------------------------------------------- settings
    def get_setting(self, key: str) -> str | None:
        rows = self._read(q.GET_SETTING, (key,))
        return rows[0][0] if rows else None

    def setting_or_set(self, key: str, value: str) -> str:
        """The setting's value, set to `value` first if absent (atomic: processes starting together agree)."""
        def get_or_set(tx: Tx) -> str:
            tx.execute(q.SETTING_IF_ABSENT, (key, value))
            return str(tx.execute(q.GET_SETTING, (key,))[0][0])

        return self._write(get_or_set)

    def set_setting(self, key: str, value: str) -> None:
        self._write(lambda tx: tx.execute(q.SET_SETTING, (key, value)))
