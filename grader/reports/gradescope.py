"""`--format gradescope`: the `results/results.json` a Gradescope autograder writes.

A missing or malformed file shows the student "The autograder failed to
execute correctly", so the text is built from plain dicts, always valid
UTF-8 JSON with `\\n` line endings, and written atomically (`write_atomic`):
a grader killed half-way never leaves half a file behind.

With `output_format: md`, every learner-derived text (problems, notes, what
the code printed, folder names) sits inside a code fence no backtick run can
close, or is escaped (`md_escape`), so a submission cannot forge headings,
links, image beacons or raw HTML. Totals follow CONTRACT §4.1: a bonus step
graded but not counted is listed with score and max_score 0.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.atomic import write_output as _write_atomic
from attn_practice.grader.reports._text import (
    OUTPUT_LIMIT,
    bound,
    clean,
    diagnosis_text,
    fence,
    json_text,
    label,
    md_escape,
    num,
    step_number,
    step_problem,
)
from attn_practice.grader.reports.checks import check_lines, checks_heading, failing_headline
from attn_practice.grader.results import GradeReport, Status, StepResult

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
OUTPUT_FORMATS = ("md", "text")


def _test_output(step: StepResult, fmt: str) -> str:
    """The failing test's name first, every check with ✓/✗, then what went wrong, the
    known mistake, notes and (bounded) what the code printed."""
    problem = clean(step_problem(step))
    diag = clean(diagnosis_text(step))
    notes = [clean(n) for n in step.notes]
    printed = bound(clean(step.output), OUTPUT_LIMIT) if step.output else ""
    headline, heading, checks = failing_headline(step), checks_heading(step), check_lines(step)
    parts: list[str] = []
    if fmt == "md":
        if headline:
            parts.append(f"**{md_escape(headline)}**")
        if checks:
            parts.append(md_escape(heading) + "\n\n" + fence("\n".join(checks)))
        if problem:
            parts.append(fence(bound(problem, OUTPUT_LIMIT)))
        for d in step.diagnoses:
            body = "\n\n".join(md_escape(x) for x in (d.explanation, d.nudge) if x)
            parts.append(f"**Likely mistake `{label(d.id).replace('`', '')}`: {md_escape(d.title)}**"
                         + (f"\n\n{body}" if body else ""))
        if notes:
            parts.append("Notes:\n\n" + fence("\n".join(f"- {n}" for n in notes)))
        if printed:
            parts.append("Your code printed:\n\n" + fence(printed))
    else:
        if headline:
            parts.append(headline)
        if checks:
            parts.append(heading + "\n" + "\n".join(checks))
        if problem:
            parts.append(bound(problem, OUTPUT_LIMIT))
        if diag:
            parts.append(diag)
        parts += [f"Note: {n}" for n in notes]
        if printed:
            parts.append("Your code printed:\n" + printed)
    if not parts and step.status is Status.PASSED:
        parts.append("All checks passed.")
    return "\n\n".join(parts)


def _summary(report: GradeReport, fmt: str) -> str:
    lines = [f"attn-practice: {num(report.score)}/{num(report.max_score)} points."]
    failed = [s.id for s in report.steps if s.grader_failed]
    if failed:  # CONTRACT 4.4: said first, so no one reads the score as a verdict
        lines.append(f"The autograder itself failed while grading {', '.join(failed)}: the points "
                     "missing there are not a verdict on your code. Please tell your instructor; "
                     "the other steps were graded as usual.")
        happened = list(dict.fromkeys(f"{s.id}: {' '.join(t.failure.summary.split())[:200]}"
                                      for s in report.steps for t in s.tests
                                      if t.failure is not None and t.failure.kind.grader_fault))
        what = "What happened (retried once on a fresh sandbox):\n" + "\n".join(happened[:10])
        lines.append(fence(clean(what)) if fmt == "md" else clean(what))
    if report.graded_path:
        where = (f"Graded the folder {report.graded_path} (the step files were not at the top "
                 "of the submission).")
        lines.append(fence(clean(where)) if fmt == "md" else clean(where))
    if report.warnings:
        said = "\n".join(f"Warning: {w}" for w in report.warnings)
        lines.append(fence(clean(said)) if fmt == "md" else clean(said))
    if report.error:
        err = bound(clean(report.error), OUTPUT_LIMIT)
        lines.append(fence(err) if fmt == "md" else err)
    return "\n\n".join(lines)


def _name(step: StepResult) -> str:
    name = f"{step.id}: {step.title}" if step.title else step.id
    return name if step.counted else f"{name} (bonus, not counted)"


def _number(step: StepResult, index: int) -> str:
    n = step_number(step.id)
    return str(n if n is not None else index)


def results(
    report: GradeReport,
    *,
    output_format: str = "md",
    visibility: str = "visible",
    stdout_visibility: str = "hidden",
) -> dict[str, Any]:
    """The results.json object for one report (see FORMATS.md, Gradescope)."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, not {output_format!r}")
    for v in (visibility, stdout_visibility):
        if v not in VISIBILITIES:
            raise ValueError(f"visibility must be one of {VISIBILITIES}, not {v!r}")
    tests = [
        {
            "score": float(s.score) if s.counted else 0.0,
            "max_score": float(s.max_score) if s.counted else 0.0,
            "status": "passed" if s.passed else "failed",
            "name": _name(s),
            "number": _number(s, i),
            "output": _test_output(s, output_format),
            "output_format": output_format,
            "tags": s.diagnosis_ids + ([] if s.counted else ["not-counted"]),
            "visibility": "visible",
        }
        for i, s in enumerate(report.steps, start=1)
    ]
    return {
        "score": float(report.score),
        "execution_time": math.ceil(max(0.0, report.duration)),
        "output": _summary(report, output_format),
        "output_format": output_format,
        "test_output_format": output_format,
        "visibility": visibility,
        "stdout_visibility": stdout_visibility,
        "tests": tests,
    }


def render(reports: Sequence[GradeReport], **options: Any) -> str:
    """results.json text for exactly one report; `options` go to `results`."""
    if len(reports) != 1:
        raise ValueError(f"the gradescope format takes exactly one submission, got {len(reports)}")
    return json_text(results(reports[0], **options)) + "\n"


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write results.json atomically and world-readable (Gradescope's harness reads it)."""
    _write_atomic(path, text, mode=0o644)
