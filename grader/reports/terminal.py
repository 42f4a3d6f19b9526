"""Rich rendering for learners and staff at a terminal.

Plain text when piped (rich decides), colours honour NO_COLOR. A failure
shows the smallest failing input, expected vs got, the tolerance, a repro
line and only the learner's own traceback; then what to do next.

Laid out for an 80-column terminal: no boxes around failures (a box eats
four columns, truncates long titles and puts `│` into every copied line);
long lines wrap with a hanging indent under their icon or label instead.
The repro snippet is printed unindented and soft-wrapped, so it can be
copied and pasted into Python as it stands.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from attn_practice.grader.catalog import step_number
from attn_practice.grader.reports._text import clean, label
from attn_practice.grader.results import Failure, GradeReport, Status, StepResult, TestResult

ICONS = {
    Status.PASSED: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.ERROR: ("!", "red"),
    Status.TIMEOUT: ("⏱", "yellow"),
    Status.MISSING: ("·", "dim"),
    Status.SKIPPED: ("-", "dim"),
}
MAX_DETAILED_FAILURES = 2
OUTPUT_LIMIT = 1500
#: Failure kinds whose summaries differ only in numbers: one is enough to show.
_SAME_CAUSE_KINDS = {"nonfinite", "timeout", "not-implemented", "crash"}


def status_text(status: Status) -> Text:
    icon, style = ICONS[status]
    return Text(f"{icon} {status.value}", style=style)


class Hanging:
    """`prefix body`, with `body` wrapping under itself (not under the prefix).

    Every line of `body` keeps its own leading spaces, and its continuation
    lines are indented two more: a wrapped traceback or array line stays
    readable. Lines carry no trailing padding, so piped output stays clean.
    """

    def __init__(self, prefix: Text | None, body: Text, indent: int = 0):
        self.prefix = prefix
        self.body = body
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lead = self.indent + (self.prefix.cell_len + 1 if self.prefix is not None else 0)
        width = max(options.max_width - lead, 20)
        first = True
        for raw in self.body.split("\n", allow_blank=True):
            plain = raw.plain
            own = len(plain) - len(plain.lstrip(" "))
            if own >= width - 10:
                own = 0
            content = raw[own:] if own else raw
            extra = 2 if own else 0  # an indented (code-like) line: continuations go 2 further in
            wrapped = content.wrap(console, width - own - extra, overflow="fold", no_wrap=False) \
                if content.plain else [Text("")]
            for i, line in enumerate(wrapped):
                line.rstrip()
                pad = own + (extra if i else 0)
                out = Text(" " * self.indent)
                if self.prefix is not None:
                    out.append_text(self.prefix + " " if first else Text(" " * (self.prefix.cell_len + 1)))
                first = False
                out.append(" " * pad)
                out.append_text(line)
                out.end = "\n"
                yield out


def hanging(icon: str | Text, body: str | Text, *, indent: int = 0, style: str = "",
            body_style: str = "") -> Hanging:
    """`icon body` where `body` wraps under itself, not under the icon."""
    icon_text = icon if isinstance(icon, Text) else Text(icon, style=style)
    body_text = body if isinstance(body, Text) else Text(body, style=body_style)
    return Hanging(icon_text, body_text, indent)


def indented(text: str | Text, indent: int = 4, style: str = "") -> Hanging:
    """A block of text `indent` columns in; each line wraps under its own indentation."""
    body = text if isinstance(text, Text) else Text(text, style=style)
    return Hanging(None, body, indent)


def step_label(step: StepResult) -> str:
    """`Step 6 (bonus)` only for a bonus step that does not count: a step a course counts is never 'bonus'."""
    return f"Step {step_number(step.id) or step.id}" + (" (bonus)" if step.bonus and not step.counted else "")


def render_step(console: Console, step: StepResult, *, verbose: bool = False) -> None:
    """One step as a learner sees it after `check`: header, a line per test, then why."""
    icon, style = ICONS[step.status]
    passed = sum(t.status is Status.PASSED for t in step.tests)
    header = Text.assemble((f"{step_label(step)} · ", "bold"), (step.title, "bold"))
    if step.tests and step.status is not Status.MISSING:
        header.append(f"  ({passed}/{len(step.tests)} tests passed)", style="dim")
    console.print(hanging(Text(icon, style=style + " bold"), header))
    if step.status is Status.MISSING:
        console.print(indented(clean(step.error), 2, style="dim"))
        return
    if not step.tests and step.error:
        console.print(indented(clean(step.error), 2, style=style))
    for t in step.tests:
        t_icon, t_style = ICONS[t.status]
        console.print(hanging(t_icon, clean(t.name), indent=2, style=t_style))
    failures = [t for t in step.tests if t.status is not Status.PASSED and t.failure is not None]
    shown = failures if verbose else _distinct(failures)[:MAX_DETAILED_FAILURES]
    for i, t in enumerate(shown, 1):
        console.print()
        render_failure(console, t, step, number=i if len(shown) > 1 else 0)
    if len(failures) > len(shown):
        console.print()
        more = len(failures) - len(shown)
        console.print(indented(f"({more} more failing test{'s' if more > 1 else ''} with the same or "
                               "a similar cause: fix the one above first, or see them all with "
                               "--verbose)", 2, style="dim"))
    for d in step.diagnoses:
        console.print()
        console.print(hanging(Text("Known mistake", style="bold yellow"),
                              Text.assemble((f"[{d.id}] ", "yellow"), (clean(d.title), "bold")), indent=2))
        if d.explanation:
            console.print(indented(clean(d.explanation), 4))
        if d.nudge:
            console.print(hanging(Text("Try:", style="bold"), clean(d.nudge), indent=4))
    if step.output.strip():
        console.print()
        console.print(indented(Text("Your code printed:", style="bold"), 2))
        console.print(indented(_bounded(clean(step.output).rstrip("\n"), OUTPUT_LIMIT), 4, style="dim"))
    if step.notes:
        console.print()
    for note in step.notes:
        console.print(hanging(Text("note:", style="cyan"), clean(note), indent=2))


_FILE_RE = re.compile(r'File "([^"]+)"')


def short_paths(text: str) -> str:
    """`File "/long/path/ws/step1_scores.py"` -> `File "step1_scores.py"` when under the cwd."""
    try:
        here = os.getcwd()
    except OSError:
        return text

    def shorten(m: re.Match[str]) -> str:
        path = m.group(1)
        if os.path.isabs(path):
            try:
                rel = os.path.relpath(path, here)
            except ValueError:
                return m.group(0)
            if not rel.startswith(".."):
                return f'File "{rel}"'
        return m.group(0)

    return _FILE_RE.sub(shorten, text)


def render_failure(console: Console, t: TestResult, step: StepResult, *, number: int = 0) -> None:
    """Why one test failed: what went wrong, on which input, where in the learner's code, and how
    to reproduce it."""
    f = t.failure
    assert f is not None
    icon, style = ICONS[t.status]
    label = f"Failure {number}: " if number else "Failed: "
    console.print(hanging(Text(icon, style=style + " bold"),
                          Text.assemble((label, style + " bold"), (clean(t.name), "bold")), indent=2))
    console.print(indented(Text(clean(f.summary), style="bold"), 4))
    if f.details:
        console.print(indented(short_paths(clean(f.details)).rstrip("\n"), 4))
    if f.traceback:
        console.print(indented(Text("Your code (most recent call last):", style="bold"), 4))
        console.print(indented(short_paths(clean(f.traceback)).rstrip("\n"), 4))
    if f.repro:
        render_repro(console, f, step)
    if f.hint:
        console.print(hanging(Text("Next:", style="bold green"), clean(f.hint), indent=4))


def repro_snippet(f: Failure, step: StepResult) -> list[str]:
    """Lines of Python that reproduce the failing call, ready to paste."""
    repro = clean(f.repro).strip()
    if not repro:
        return []
    if repro.startswith("#"):  # a whole snippet, written for where the learner's code is (intake.origin)
        return repro.splitlines()
    imports = []
    if step.file and step.function:
        imports.append(f"from {step.file.removesuffix('.py')} import {step.function}")
    if "np." in repro:
        imports.append("import numpy as np")
    return (["; ".join(imports)] if imports else []) + [repro]


def render_repro(console: Console, f: Failure, step: StepResult) -> None:
    lines = repro_snippet(f, step)
    if not lines:
        return
    where = f" (run Python in the folder that holds {step.file})" if step.file and not lines[0].startswith("#") \
        else ""
    console.print(indented(Text.assemble(("Reproduce it", "bold"), where + ":"), 4))
    for line in lines:
        # Unindented and soft-wrapped: the terminal wraps it, a copy gives one line back.
        console.print(Text(line, style="cyan"), soft_wrap=True)


def _distinct(failures: list[TestResult]) -> list[TestResult]:
    """One failure per distinct cause: the same bug seen by five tests is shown once."""
    seen: set[str] = set()
    out = []
    for t in failures:
        f = t.failure
        if f is None:
            key = t.message
        elif f.kind in _SAME_CAUSE_KINDS:
            key = f.kind
        else:
            key = f"{f.kind}:{f.summary.split(':')[0]}"
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def render_report(console: Console, report: GradeReport, *, verbose: bool = False) -> None:
    """A whole submission: a summary table, then the details of each failing step."""
    from rich.table import Table  # here: a learner's check shows steps, never this table

    console.rule(Text(label(report.submission), style="bold"))
    if report.graded_path:
        console.print(Text(f"(graded the folder {label(report.graded_path)}: the step files were "
                           "not at the top of the submission)", style="dim"))
    for w in report.warnings:
        console.print(Text(f"warning: {clean(w)}", style="yellow"))
    if report.error:
        console.print(Text(f"! {clean(report.error)}", style="red"))
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("step", no_wrap=True)
    table.add_column("title")
    table.add_column("status", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("diagnoses")
    short = console.width < 100  # "Scores" rather than "Scores: how well does each query ..."
    for s in report.steps:
        title = s.title.split(":")[0] if short else s.title
        score = f"{s.score:g}/{s.max_score:g}" if s.counted else "not counted"
        # A step the course counts is never "bonus" here, whatever the catalogue calls it.
        table.add_row(s.id + (" (bonus)" if s.bonus and not s.counted else ""), title, status_text(s.status),
                      score, ", ".join(s.diagnosis_ids))
    console.print(table)
    for why in dict.fromkeys(s.error for s in report.steps if s.status is Status.MISSING and s.error):
        ids = ", ".join(s.id for s in report.steps if s.status is Status.MISSING and s.error == why)
        console.print(Text(f"{ids} missing: {clean(why)}", style="dim"))
    for s in report.steps:
        if s.status not in (Status.PASSED, Status.MISSING):
            console.print()
            render_step(console, s, verbose=verbose)
    console.print()
    console.print(Text(f"Score: {report.score:g} / {report.max_score:g}", style="bold"))
    if any(not s.counted for s in report.steps):
        console.print(Text("(bonus steps marked \"not counted\" are graded for feedback only: "
                           "this course does not count them)", style="dim"))


def render_reports(console: Console, reports: Sequence[GradeReport], *, verbose: bool = False) -> None:
    for r in reports:
        render_report(console, r, verbose=verbose)
    if len(reports) > 1:
        passed = sum(r.passed for r in reports)
        console.print(Text(f"{len(reports)} submissions: {passed} fully passed, "
                           f"mean score {sum(r.score for r in reports) / len(reports):.2f}", style="bold"))
