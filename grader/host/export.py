"""The class's results for staff tools: `grade --format json` reports, a CSV gradebook, a backup.

One GradeReport per learner, assembled from their latest report of each
step (the checks they ran in class), then scored by the course's rule
(`Course.apply`, CONTRACT §4.1): a step never checked is `missing`, points
are the course's. The JSON is `json_report.render`'s, so `attn-practice
report` reads it unchanged; the CSV is `csv_report.render`'s gradebook.
"""

from __future__ import annotations

import csv
import enum
import io
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from attn_practice import __version__
from attn_practice.grader.course import Course, default_course
from attn_practice.grader.host.auth import Setting
from attn_practice.grader.host.store.base import Learner, Store
from attn_practice.grader.results import GradeReport

ASK_STUDENT_ID = Setting.ASK_STUDENT_ID.value


class ExportFormat(str, enum.Enum):
    JSON = "json"
    CSV = "csv"


def label_for(learner: Learner) -> str:
    """The submission label: the student id when given, else the name (with a short id: unique)."""
    if learner.student_id:
        return learner.student_id
    return f"{learner.display_name} [{learner.id[:8]}]"


def labels(learners: Sequence[Learner]) -> dict[str, str]:
    """learner id -> their label, unique in the class: two learners never share one.

    An id several learners hold (from before ids were checked once per class,
    also "S123" beside "s 123") names each holder in its label, so `report`
    keeps every one of them and the instructor sees the clash.
    """
    from collections import Counter

    from attn_practice.grader.host.store.sql_integrity import student_id_key

    held = Counter(student_id_key(x.student_id) for x in learners if x.student_id)
    out = {x.id: (f"{x.student_id} (id shared: {x.display_name} [{x.id[:8]}])"
                  if x.student_id and held[student_id_key(x.student_id)] > 1 else label_for(x))
           for x in learners}
    twice = Counter(out.values())
    return {i: f"{label} [{i}]" if twice[label] > 1 else label for i, label in out.items()}


def histories(store: Store) -> dict[str, list[dict[str, Any]]]:
    """learner id -> every check of the session, oldest first, as CONTRACT §7.1's `history`.

    The latest reports alone keep only what was still wrong at the end; a
    lab's lecture is about every mistake met on the way, fixed or not.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for row in store.report_history():
        out.setdefault(row.learner_id, []).append({
            "step": row.step, "at": _iso(row.created), "status": row.status,
            "diagnoses": list(row.diagnoses)})
    return out


def _iso(created: float) -> str:
    return datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def class_reports(store: Store, course: Course | None = None) -> list[GradeReport]:
    course = course or default_course()
    latest: dict[str, list[GradeReport]] = {}
    for row in store.latest_reports():
        latest.setdefault(row.learner_id, []).append(GradeReport.from_dict(row.report))
    out = []
    learners = store.learners()
    names = labels(learners)
    for learner in learners:
        steps = tuple(s for rep in latest.get(learner.id, []) for s in rep.steps)
        report = GradeReport(submission=names[learner.id], steps=steps,
                             duration=sum(r.duration for r in latest.get(learner.id, [])),
                             grader_version=__version__)
        out.append(course.apply(_ordered(report)))
    return out


def _ordered(report: GradeReport) -> GradeReport:
    from attn_practice.grader.catalog import step_number

    return replace(report, steps=tuple(sorted(report.steps, key=lambda s: step_number(s.id) or 99)))


def export_text(store: Store, course: Course | None, fmt: ExportFormat) -> str:
    """The whole export: JSON records with their `history`, or the CSV gradebook (with a
    student_id column when the class asks for ids)."""
    reports = class_reports(store, course)
    learners = store.learners()
    if fmt is ExportFormat.CSV:
        ids = store.get_setting(ASK_STUDENT_ID) == "1" or any(x.student_id for x in learners)
        return render(reports, fmt, learners=learners if ids else None)
    return render(reports, fmt, histories=_by_label(learners, histories(store)))


def _by_label(learners: Sequence[Learner], by_id: dict[str, list[dict[str, Any]]]
              ) -> dict[str, list[dict[str, Any]]]:
    names = labels(learners)
    return {names[x.id]: by_id.get(x.id, []) for x in learners}


def render(reports: Sequence[GradeReport], fmt: ExportFormat, *,
           histories: dict[str, list[dict[str, Any]]] | None = None,
           learners: Sequence[Learner] | None = None) -> str:
    """JSON: `grade --format json`'s array, each record with its `history` when given. CSV: the
    gradebook, with `student_id` and `name` after `submission` when `learners` are given."""
    if fmt is ExportFormat.CSV:
        from attn_practice.grader.reports import csv_report

        text = csv_report.render(reports)
        return _with_ids(text, reports, learners) if learners is not None else text
    from attn_practice.grader.reports._text import json_text

    records = [r.to_dict() for r in reports]
    if histories is not None:
        for record in records:
            record["history"] = histories.get(record["submission"], [])
    # Always an array (also for one learner), as `grade` prints for a class.
    return json_text(records) + "\n"


def _with_ids(text: str, reports: Sequence[GradeReport], learners: Sequence[Learner]) -> str:
    """The gradebook with the learners' student ids and names beside each submission label."""
    from attn_practice.grader.reports.csv_report import safe_cell

    names = labels(learners)
    who = {names[x.id]: x for x in learners}
    rows = list(csv.reader(io.StringIO(text)))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow([rows[0][0], "student_id", "name", *rows[0][1:]])
    for report, row in zip(reports, rows[1:], strict=True):
        x = who.get(report.submission)
        writer.writerow([row[0], safe_cell(x.student_id) if x else "",
                         safe_cell(x.display_name) if x else "", *row[1:]])
    return buf.getvalue()


def backup(store: Store, out: Path) -> None:
    """A consistent copy of a running class's SQLite database (its online backup API)."""
    copy = getattr(store, "backup", None)
    if copy is None:
        raise ValueError("backup copies the SQLite store; for PostgreSQL use pg_dump")
    if out.exists():
        raise FileExistsError(f"{out} exists; give a new file name")
    copy(out)
