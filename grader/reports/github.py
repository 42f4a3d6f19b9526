"""`--format github`: GitHub Classroom results, annotations and a job summary.

The Classroom reporter action (`education/autograding-grading-reporter`)
reads base64 JSON from the step output `result`; it sums `tests[].score` for
the grade, but draws its table as passes/len(tests) x max_score, so per-test
scores are cut into equal shares whenever steps are worth different points.

Learner text must never reach the log where the runner would read it as a
workflow command (`::add-mask::`, `::set-output`, `##[...]`): annotations are
escaped onto one line, learner output is printed between
`::stop-commands::TOKEN` and `::TOKEN::` with a fresh random token, and
messages the reporter prints have their command-like lines defanged.
Every text, the headline and the submission's name included, goes through
`clean`/`label` (no control, bidi or zero-width character, no lone
surrogate), and the Markdown summary escapes what it does not fence.

Totals follow CONTRACT §4.1: the result object holds the counted steps only
(a bonus step graded but not counted is shown in the log and summary, never
in "Points X/Y").
"""

from __future__ import annotations

import base64
import json
import math
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

from attn_practice.grader.reports._text import (
    bound,
    clean,
    fence,
    label,
    md_escape,
    num,
    step_headline,
    step_problem,
)
from attn_practice.grader.reports.checks import check_lines, checks_heading, failing_headline
from attn_practice.grader.reports.junit import step_file
from attn_practice.grader.results import GradeReport, Status, StepResult

MESSAGE_LIMIT = 1000
#: Beyond this many equal shares, fall back to one test per step.
MAX_SHARES = 60

_STATUS = {
    Status.PASSED: "pass",
    Status.FAILED: "fail",
    Status.MISSING: "fail",
    Status.SKIPPED: "fail",
    Status.ERROR: "error",
    Status.TIMEOUT: "error",
}


def defang(text: str) -> str:
    """Text in which no line can be read as a workflow command."""
    lines = clean(text).split("\n")
    return "\n".join(
        f"> {line}" if line.lstrip().startswith(("::", "##[")) else line for line in lines
    )


def escape_data(value: str) -> str:
    """GitHub's escaping for a workflow command's message (after the last `::`)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """GitHub's escaping for a workflow command property value (`file=`, `title=`)."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


# -- the Classroom result object ---------------------------------------------


def _unit(steps: Sequence[StepResult]) -> Fraction | None:
    """The largest share that divides every max score and score, if few enough shares."""
    values = [Fraction(v).limit_denominator(1000) for s in steps for v in (s.max_score, s.score)]
    values = [v for v in values if v > 0]
    if not values:
        return None
    denom = math.lcm(*(v.denominator for v in values))
    unit = Fraction(math.gcd(*(int(v * denom) for v in values)), denom)
    shares = sum(Fraction(s.max_score).limit_denominator(1000) / unit for s in steps)
    return unit if shares <= MAX_SHARES else None


def _checks(step: StepResult) -> str:
    """Every check with ✓/✗, the failing ones first ("" for a step with none)."""
    lines = check_lines(step)
    return checks_heading(step) + "\n" + "\n".join(lines) if lines else ""


def _message(step: StepResult) -> str:
    """The failing test's name, every check, then why (bounded for the reporter's table)."""
    if step.passed:
        return bound(defang(_checks(step)), MESSAGE_LIMIT)
    parts = [failing_headline(step), _checks(step), step_problem(step)]
    if step.diagnoses:
        parts.append("Likely mistake: " + ", ".join(f"{d.id} ({d.title})" for d in step.diagnoses))
    return bound(defang("\n\n".join(p for p in parts if p)), MESSAGE_LIMIT)


def _test_code(step: StepResult) -> str:
    for t in step.tests:
        if t.failure is not None and t.failure.repro:
            return defang(t.failure.repro)
    return f"attn-practice check {step.id}"


def _step_tests(step: StepResult, unit: Fraction | None, file: str) -> Iterator[dict[str, Any]]:
    base = {
        "test_code": _test_code(step),
        "filename": label(file),
        "line_no": int(step.line),
    }
    name = f"{step.id}: {step.title}" if step.title else step.id
    max_score = Fraction(step.max_score).limit_denominator(1000)
    n = int(max_score / unit) if unit and max_score else 1
    if n <= 1:
        yield {"name": name, "status": _STATUS[step.status], "score": float(step.score),
               "message": _message(step), **base, "duration": round(step.duration * 1000)}
        return
    assert unit is not None
    earned = round(Fraction(step.score).limit_denominator(1000) / unit)
    bad = "error" if step.status in (Status.ERROR, Status.TIMEOUT) else "fail"
    for i in range(n):
        ok = i < earned
        yield {
            "name": f"{name} ({i + 1}/{n})",
            "status": "pass" if ok else bad,
            "score": float(unit) if ok else 0.0,
            "message": _message(step) if i == earned else "",
            **base,
            "duration": round(step.duration * 1000) if i == 0 else 0,
        }


def result_object(report: GradeReport) -> dict[str, Any]:
    """The `{"version": 1, ...}` object one grading step hands the reporter."""
    counted = [s for s in report.steps if s.counted]
    unit = _unit(counted)
    tests = [t for s in counted for t in _step_tests(s, unit, step_file(report, s))]
    if report.error:
        tests.append({"name": "attn-practice", "status": "error", "score": 0.0,
                      "message": bound(defang(report.error), MESSAGE_LIMIT),
                      "test_code": f"attn-practice grade {label(report.submission)}",
                      "filename": "", "line_no": 0, "duration": 0})
        status = "error"
    else:
        status = "pass" if report.passed else "fail"
    return {"version": 1, "status": status, "max_score": float(report.max_score), "tests": tests}


def _combine(objects: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Several submissions in one runner: tests prefixed by submission, worst status."""
    if len(objects) == 1:
        return objects[0]
    statuses = {o["status"] for o in objects}
    status = "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"
    tests = [{**t, "name": f"{label(name)}: {t['name']}"}
             for o, name in zip(objects, names, strict=True) for t in o["tests"]]
    return {"version": 1, "status": status,
            "max_score": float(sum(o["max_score"] for o in objects)), "tests": tests}


def _b64(obj: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(obj, ensure_ascii=True).encode("ascii")).decode("ascii")


def encode(report: GradeReport) -> str:
    """Base64 of the result object's JSON: the value of the `result` step output."""
    return _b64(result_object(report))


# -- what people read ---------------------------------------------------------

_ICON = {"pass": "✅", "fail": "❌", "error": "💥"}


def _cell(text: str) -> str:
    """One Markdown table cell of learner-derived text, shown literally (escaped, one line)."""
    return md_escape(text)


def _trusted_cell(text: str) -> str:
    """A cell of our own text (step titles): one line, no column break."""
    return label(text).replace("|", "\\|")


def summary_markdown(reports: Sequence[GradeReport]) -> str:
    """A Markdown job summary: a table per submission, then why each step failed."""
    out: list[str] = []
    for r in reports:
        out.append(f"## attn-practice: {_cell(r.submission)} {num(r.score)}/{num(r.max_score)} points\n")
        if r.graded_path:
            out.append(f"Graded the folder {_cell(r.graded_path)}: the step files were not at "
                       "the top of the submission.\n")
        out += [f"> Warning: {_cell(w)}\n" for w in r.warnings]
        if r.error:
            out.append(fence(bound(clean(r.error), MESSAGE_LIMIT)) + "\n")
        if r.steps:
            out += ["| Step | Status | Score | Likely mistake |", "| --- | --- | --- | --- |"]
            for s in r.steps:
                icon = _ICON[_STATUS[s.status]]
                ids = ", ".join(f"`{i}`" for i in s.diagnosis_ids)
                title = f"{s.id}: {s.title}" if s.title else s.id
                title += "" if s.counted else " (bonus, not counted)"
                out.append(f"| {_trusted_cell(title)} | {icon} {s.status} | "
                           f"{num(s.score)}/{num(s.max_score)} | {ids} |")
            out.append("")
        for s in r.steps:
            if s.passed:
                if s.tests:
                    out += [f"<details><summary>{_cell(s.id)}: {_cell(checks_heading(s).rstrip(':'))}"
                            "</summary>\n", fence("\n".join(check_lines(s))), "\n</details>\n"]
                continue
            head = failing_headline(s)
            out += [f"<details><summary>{_cell(s.id)}: why it did not pass"
                    f"{' (' + _cell(head) + ')' if head else ''}</summary>\n",
                    fence(bound(clean("\n\n".join(p for p in (_checks(s), step_problem(s)) if p)),
                                MESSAGE_LIMIT * 4)), "\n</details>\n"]
    return "\n".join(out) + "\n"


def _command(level: str, message: str, **props: str | int) -> str:
    given = ",".join(f"{k}={escape_property(label(str(v)))}" for k, v in props.items() if v)
    return f"::{level}{' ' + given if given else ''}::{escape_data(clean(message))}"


def annotations(report: GradeReport) -> list[str]:
    """`::error`/`::notice` lines pointing at the learner's own file and line."""
    lines: list[str] = []
    if report.error:
        lines.append(_command("error", report.error, title="attn-practice could not grade"))
    if report.graded_path:
        lines.append(_command("notice", f"graded the folder {label(report.graded_path)}: the step "
                              "files were not at the top of the submission",
                              title="attn-practice graded a subfolder"))
    lines += [_command("warning", w, title="attn-practice") for w in report.warnings]
    for s in report.steps:
        file = "" if s.status is Status.MISSING else step_file(report, s)
        if not s.passed:
            first = failing_headline(s)
            message = (f"{first}: " if first else "") + (step_headline(s) or f"{s.id} {s.status}")
            if s.diagnoses:
                message += "\nLikely mistake: " + ", ".join(f"{d.id} ({d.title})" for d in s.diagnoses)
            title = f"{s.id} {s.status} ({num(s.score)}/{num(s.max_score)})"
            title += "" if s.counted else " bonus, not counted"
            lines.append(_command("error", bound(message, MESSAGE_LIMIT), file=file,
                                  line=s.line if file else 0, title=title))
        for note in s.notes:
            lines.append(_command("notice", bound(note, MESSAGE_LIMIT), file=file,
                                  line=s.line if file else 0, title=f"{s.id} note"))
    return lines


def _log_text(reports: Sequence[GradeReport]) -> str:
    """Scores and what the learner's code printed: may hold anything."""
    parts: list[str] = []
    for r in reports:
        parts.append(f"attn-practice {label(r.submission)}: {num(r.score)}/{num(r.max_score)} points")
        if r.graded_path:
            parts.append(f"  (graded the folder {label(r.graded_path)})")
        parts += [f"  warning: {label(w)}" for w in r.warnings]
        for s in r.steps:
            ids = f" [{', '.join(s.diagnosis_ids)}]" if s.diagnoses else ""
            head = "" if s.passed else f": {label(step_headline(s))}"
            extra = "" if s.counted else " (bonus, not counted)"
            parts.append(f"  {s.id} {s.status} {num(s.score)}/{num(s.max_score)}{extra}{ids}{head}")
            parts += [f"    {line}" for line in check_lines(s)]
        for s in r.steps:
            if s.output:
                parts.append(f"----- {s.id}: what your code printed -----")
                parts.append(bound(clean(s.output)))
    return "\n".join(parts)


def _stop_token(text: str) -> str:
    while True:
        token = secrets.token_hex(16)
        if token not in text:
            return token


def render(reports: Sequence[GradeReport], *, env: Mapping[str, str] = os.environ) -> str:
    """The text to print to the job log; also writes `$GITHUB_OUTPUT` and the step summary.

    `result=<base64>` is appended to the file named by `$GITHUB_OUTPUT` (one
    line: base64 has no newlines), and the Markdown summary to the file named
    by `$GITHUB_STEP_SUMMARY`, each only when that variable is set.
    """
    names = [r.submission for r in reports]
    result = _combine([result_object(r) for r in reports], names)
    output_file = env.get("GITHUB_OUTPUT")
    if output_file:
        with open(output_file, "a", encoding="utf-8", newline="\n") as f:
            f.write(f"result={_b64(result)}\n")
    summary_file = env.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8", newline="\n") as f:
            f.write(_encodable(summary_markdown(reports)))
    lines = [line for r in reports for line in annotations(r)]
    log = _log_text(reports)
    token = _stop_token(log)
    lines += [f"::stop-commands::{token}", log, f"::{token}::"]
    return _encodable("\n".join(lines) + "\n")


def _encodable(text: str) -> str:
    """A belt to `clean`: whatever slipped through can still be written as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
