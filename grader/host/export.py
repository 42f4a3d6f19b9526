"""The class's results for staff tools: `grade --format json` reports, a CSV gradebook, a backup.

One GradeReport per learner, assembled from their latest report of each
step (the checks they ran in class), then scored by the course's rule
(`Course.apply`, CONTRACT §4.1): a step never checked is `missing`, points
are the course's. The JSON is `json_report.render`'s, so `attn-practice
report` reads it unchanged; the CSV is `csv_report.render`'s gradebook.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from attn_practice import __version__
from attn_practice.grader.course import Course, default_course
from attn_practice.grader.host.store.base import Learner, Store
from attn_practice.grader.results import GradeReport


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


def render(reports: Sequence[GradeReport], fmt: ExportFormat) -> str:
    if fmt is ExportFormat.CSV:
        from attn_practice.grader.reports import csv_report

        return csv_report.render(reports)
    from attn_practice.grader.reports._text import json_text

    # Always an array (also for one learner), as `grade` prints for a class.
    return json_text([r.to_dict() for r in reports]) + "\n"


def backup(store: Store, out: Path) -> None:
    """A consistent copy of a running class's SQLite database (its online backup API)."""
    copy = getattr(store, "backup", None)
    if copy is None:
        raise ValueError("backup copies the SQLite store; for PostgreSQL use pg_dump")
    if out.exists():
        raise FileExistsError(f"{out} exists; give a new file name")
    copy(out)
