"""Rich rendering for learners and staff at a terminal.

Plain text when piped (rich decides), colours honour NO_COLOR. A failure
shows the smallest failing input, expected vs got, the tolerance, a repro
line and only the learner's own traceback; then what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..results import GradeReport, Status, StepResult, TestResult

ICONS = {
    Status.PASSED: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.ERROR: ("!", "red"),
    Status.TIMEOUT: ("⏱", "yellow"),
    Status.MISSING: ("·", "dim"),
    Status.SKIPPED: ("-", "dim"),
}
MAX_DETAILED_FAILURES = 2


def status_text(status: Status) -> Text:
    icon, style = ICONS[status]
    return Text(f"{icon} {status.value}", style=style)


def render_step(console: Console, step: StepResult, *, verbose: bool = False) -> None:
    """One step as a learner sees it after `check`."""
    icon, style = ICONS[step.status]
    label = f"Step {step.id.removeprefix('step')}" + (" (bonus)" if step.bonus else "")
    console.print(Text.assemble((f"{icon} ", style), (f"{label} · ", "bold"), (step.title, "bold")))
    if step.status is Status.MISSING:
        console.print(f"  {escape(step.error)}", style="dim")
        return
    for t in step.tests:
        t_icon, t_style = ICONS[t.status]
        console.print(Text.assemble(("  ", ""), (t_icon, t_style), (" ", ""), (t.name, "")))
    failures = [t for t in step.tests if t.status is not Status.PASSED and t.failure is not None]
    shown = failures if verbose else _distinct(failures)[:MAX_DETAILED_FAILURES]
    for t in shown:
        console.print(_failure_panel(t))
    if len(failures) > len(shown):
        console.print(f"  ({len(failures) - len(shown)} more failing test(s) with the same or a "
                      "similar cause; fix these first, or use --verbose)", style="dim")
    for d in step.diagnoses:
        body = Text.assemble(("Known mistake ", "bold yellow"), (f"[{d.id}] ", "yellow"), (d.title, "bold"))
        parts: list = [body]
        if d.explanation:
            parts.append(Text(d.explanation))
        if d.nudge:
            parts.append(Text.assemble(("Try: ", "bold"), d.nudge))
        console.print(Panel(Group(*parts), border_style="yellow", expand=False))
    if step.output.strip():
        console.print(Panel(Text(_bounded(step.output, 1500)), title="your code printed",
                            border_style="dim", expand=False))
    for note in step.notes:
        console.print(Text.assemble(("  note: ", "cyan"), note))


def _distinct(failures: list[TestResult]) -> list[TestResult]:
    """One failure per distinct summary: the same bug seen by five tests is shown once."""
    seen: set[str] = set()
    out = []
    for t in failures:
        key = t.failure.summary.split(":")[0] if t.failure else t.message
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _failure_panel(t: TestResult) -> Panel:
    f = t.failure
    assert f is not None
    parts: list = [Text(f.summary, style="bold")]
    if f.details:
        parts.append(Text(f.details))
    if f.traceback:
        parts.append(Text("Your code (most recent call last):", style="bold"))
        parts.append(Text(f.traceback))
    if f.repro:
        parts.append(Text.assemble(("Reproduce: ", "bold"), (f.repro, "cyan")))
    if f.hint:
        parts.append(Text.assemble(("Next: ", "bold green"), f.hint))
    _, style = ICONS[t.status]
    return Panel(Group(*parts), title=Text(t.name), title_align="left", border_style=style, expand=False)


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def render_report(console: Console, report: GradeReport, *, verbose: bool = False) -> None:
    """A whole submission: a summary table, then the details of each failing step."""
    console.rule(Text(f"{report.submission}", style="bold"))
    if report.error:
        console.print(Text(f"! {report.error}", style="red"))
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("step")
    table.add_column("title")
    table.add_column("status")
    table.add_column("score", justify="right")
    table.add_column("diagnoses")
    for s in report.steps:
        table.add_row(s.id + (" (bonus)" if s.bonus else ""), s.title, status_text(s.status),
                      f"{s.score:g}/{s.max_score:g}", ", ".join(s.diagnosis_ids))
    console.print(table)
    for s in report.steps:
        if s.status not in (Status.PASSED, Status.MISSING):
            render_step(console, s, verbose=verbose)
    console.print(Text(f"Score: {report.score:g} / {report.max_score:g}", style="bold"))


def render_reports(console: Console, reports: Sequence[GradeReport], *, verbose: bool = False) -> None:
    for r in reports:
        render_report(console, r, verbose=verbose)
    if len(reports) > 1:
        passed = sum(r.passed for r in reports)
        console.print(Text(f"{len(reports)} submissions: {passed} fully passed, "
                           f"mean score {sum(r.score for r in reports) / len(reports):.2f}", style="bold"))
