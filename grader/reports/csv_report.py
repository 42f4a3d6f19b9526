"""`--format csv`: one gradebook row per submission.

Columns are stable (`submission, score, max_score, step1..stepN, status,
diagnoses, duration_s, graded_path, warnings`) so a spreadsheet built on last week's
export still lines up: the step columns are the union of step ids over all
reports, in step-number order, and a step a submission was not graded on is
left blank. Under one course every row has the same counted steps and the
same max_score (CONTRACT §4.1); a bonus step graded but not counted shows its
score in its column and adds nothing to `score`. `graded_path` names the
subfolder graded when the step files were found one folder down; `warnings`
holds how the submission was read (a near-miss name, a notebook, two versions,
nothing recognised: CONTRACT 4.5), joined by " | ", empty when there are none.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from attn_practice.grader.reports._text import label, num, step_sort_key
from attn_practice.grader.results import GradeReport

FIXED_HEAD = ["submission", "score", "max_score"]
FIXED_TAIL = ["status", "diagnoses", "duration_s", "graded_path", "warnings"]
#: Between two warnings in the `warnings` cell.
WARNING_SEPARATOR = " | "
#: What a spreadsheet may read as the start of a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def step_ids(reports: Sequence[GradeReport]) -> list[str]:
    """Every step id graded in any report, step1 before step2 before step10."""
    return sorted({s.id for r in reports for s in r.steps}, key=step_sort_key)


def header(step_ids: Sequence[str]) -> list[str]:
    return [*FIXED_HEAD, *step_ids, *FIXED_TAIL]


def _status(report: GradeReport) -> str:
    if report.error:
        return "error"
    return "passed" if report.passed else "failed"


def safe_cell(text: str) -> str:
    """A student-derived cell a spreadsheet will not evaluate as a formula.

    Directory names come from students (repository or upload names); one that
    starts with `=`, `+`, `-`, `@`, a tab or a carriage return would run as a
    formula when the gradebook is opened, so it is prefixed with a quote, as
    OWASP advises. Invisible characters are shown as `\\u{..}` (`label`).
    """
    shown = label(text)
    return f"'{shown}" if text[:1] in FORMULA_STARTS or shown[:1] in FORMULA_STARTS else shown


def row(report: GradeReport, step_ids: Sequence[str]) -> list[str]:
    by_id = {s.id: s for s in report.steps}
    cells = [num(by_id[i].score) if i in by_id else "" for i in step_ids]
    diagnoses = ";".join(f"{s.id}:{d}" for s in report.steps for d in s.diagnosis_ids)
    return [
        safe_cell(report.submission),
        num(report.score),
        num(report.max_score),
        *cells,
        _status(report),
        diagnoses,
        f"{max(0.0, report.duration):.3f}",
        safe_cell(report.graded_path),
        safe_cell(WARNING_SEPARATOR.join(report.warnings)),
    ]


def render(reports: Sequence[GradeReport]) -> str:
    """The whole CSV text: header then one row per report, CRLF line ends (RFC 4180)."""
    ids = step_ids(reports)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header(ids))
    for report in reports:
        writer.writerow(row(report, ids))
    return buf.getvalue()
