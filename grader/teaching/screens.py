"""What a learner sees for start, check, hint, status, show and solution.

Everything here is read in a terminal that may be 80 columns wide, or piped
into a file: panels are kept for prose (the lesson, hints, the solution),
and the check report uses the box-free layout of `terminal`.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.reports.terminal import hanging, indented, render_step
from attn_practice.grader.results import Status, StepResult

if TYPE_CHECKING:
    from attn_practice.grader.teaching.practice import CheckOutcome
    from attn_practice.grader.teaching.workspace import StartResult, State, Workspace

STATE_STYLE = {"passed": "green", "failed": "red", "not started": "dim"}
STATE_ICON = {"passed": "✓", "failed": "✗", "not started": "·"}


def _cd_hint(directory: Path) -> str | None:
    """How to get into the workspace from here (None: we are already there)."""
    try:
        if Path(directory).resolve() == Path.cwd().resolve():
            return None
    except OSError:
        pass
    return f"cd {shlex.quote(str(directory))}"


# ------------------------------------------------------------------ start
def render_start(console: Console, result: StartResult, directory: Path) -> None:
    ws = result.workspace
    root = Text(str(ws.root), style="bold")
    if result.existed:
        console.print(Text.assemble(root, " is already a workspace."))
        if result.created:
            console.print("Added what was missing (your other files were not touched):")
            for name in result.created:
                console.print(f"  + {name}")
        else:
            console.print("Nothing was missing; none of your files were touched.")
    elif result.kept:
        console.print(Text.assemble(("Completed the workspace", "bold green"), " in ", root))
        for name in result.created:
            console.print(f"  + {name}")
        console.print(f"Kept your existing files as they were: {', '.join(result.kept)}")
    else:
        console.print(Text.assemble(("Created your workspace", "bold green"), " in ", root))
        for name in result.created:
            console.print(f"  + {name}")
    if result.inside is not None:
        console.print(Text(f"Note: this folder is inside another workspace ({result.inside}); "
                           "commands run here use the new one.", style="yellow"))
    console.print()
    console.print("Next:")
    cd = _cd_hint(directory)
    if cd:
        console.print(f"  {cd}")
    console.print("  attn-practice show step1      # read the lesson")
    console.print("  # edit step1_scores.py, then:")
    console.print("  attn-practice check           # checks the first step you have not passed")


# ------------------------------------------------------------------ check
def render_check_header(console: Console, steps: Sequence[Exercise], *, chosen: bool) -> None:
    """One line before the work starts, so the learner knows what is being checked."""
    if chosen and len(steps) == 1:
        ex = steps[0]
        console.print(Text(f"Checking {ex.id} ({ex.file}), the first step you have not passed yet.",
                           style="dim"))
    elif len(steps) > 1:
        console.print(Text(f"Checking {len(steps)} steps: {', '.join(e.id for e in steps)}.", style="dim"))


def render_check(console: Console, outcome: CheckOutcome, *, verbose: bool = False) -> None:
    report = outcome.report
    for i, s in enumerate(report.steps):
        if i:
            console.print()
        if s.status is Status.MISSING:
            _render_missing(console, s)
        else:
            render_step(console, s, verbose=verbose)
    failed = [s for s in report.steps if not s.passed]
    if failed:
        _worked_example(console, outcome)
    console.print()
    if len(report.steps) > 1:
        done = sum(s.passed for s in report.steps)
        console.print(Text(f"{done} of {len(report.steps)} steps passed.", style="bold"))
    if not failed:
        nxt = outcome.next_step
        if nxt is None:
            console.print(Text.assemble(("All steps pass.", "bold green"),
                                        " You have built attention from scratch!"))
            if _has_command("explore"):
                console.print("  See it at work: attn-practice explore sentence")
        else:
            done_ids = ", ".join(s.id for s in report.steps)
            console.print(hanging(Text("Passed", style="bold green"),
                                  Text.assemble((done_ids + ".", "bold green"), " Next: ",
                                                (nxt.id, "bold"), f" · {nxt.title}")))
            console.print(f"  attn-practice show {nxt.id}    then edit {nxt.file} and run "
                          "attn-practice check")
        for w in outcome.warnings:
            console.print(Text(f"warning: {w}", style="yellow"))
        return
    first = failed[0]
    console.print(Text("What now:", style="bold"))
    if first.status is Status.MISSING:
        console.print(f"  Restore {first.file} with `attn-practice reset {first.id}`, then run "
                      f"`attn-practice check {first.id}`.")
    else:
        other = _other_step_in_traceback(first)
        if other is not None:
            console.print(hanging("  1.", f"The error happened inside {other.file} (your {other.id}), "
                                  f"which {first.file} uses: run `attn-practice check {other.id}` "
                                  "and fix that step first."))
            console.print(hanging("  2.", f"Then run `attn-practice check {first.id}` again. To try "
                                  f"{first.id} on its own, with the reference versions of the "
                                  f"earlier steps: `attn-practice check {first.id} "
                                  "--reference-steps`."))
        else:
            console.print(hanging("  1.", f"Fix the first problem above in {first.file}."))
            console.print(hanging("  2.", f"Run `attn-practice check {first.id}` again."))
    used = outcome.state.step(first.id).hints
    total = outcome.hints_total.get(first.id, 0)
    if used < total:
        console.print(hanging("  Stuck?", f"`attn-practice hint {first.id}` ({used} of {total} hints "
                              f"revealed), or reread the lesson: `attn-practice show {first.id}`."))
    else:
        console.print(hanging("  Stuck?", f"all {total} hints are revealed: `attn-practice hint "
                              f"{first.id}` shows them again."))
    for w in outcome.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))


def _render_missing(console: Console, s: StepResult) -> None:
    console.print(hanging(Text("·", style="bold"), Text.assemble(
        (f"Step {s.id.removeprefix('step')}{' (bonus)' if s.bonus else ''} · ", "bold"),
        (s.title, "bold"))))
    console.print(indented(f"{s.file} is missing from your workspace. `attn-practice reset {s.id}` "
                           "puts a fresh stub back (so does `attn-practice start`, which only adds "
                           "missing files).", 2))


_FILE_RE = re.compile(r'File "([^"]+)"')


def _other_step_in_traceback(step: StepResult) -> Exercise | None:
    """The earlier step whose file the first failure's traceback ends in, if any."""
    for t in step.tests:
        f = t.failure
        if f is None or not f.traceback:
            continue
        files = [os.path.basename(m) for m in _FILE_RE.findall(f.traceback)]
        if not files:
            continue
        last = files[-1]
        if last != step.file:
            for ex in load_catalog():
                if ex.file == last:
                    return ex
        return None
    return None


def _worked_example(console: Console, outcome: CheckOutcome) -> None:
    """The lesson's worked example through the learner's own code (when that module exists)."""
    try:
        from attn_practice.grader.teaching.worked_example import (
            render_check_worked_example,
            worked_example_steps,
        )
    except ImportError:
        return
    try:
        if not worked_example_steps(outcome):
            return
        launcher = getattr(outcome, "launcher", None)
        with console.capture() as captured:
            if launcher is not None:
                render_check_worked_example(console, outcome, launcher)
            else:
                render_check_worked_example(console, outcome)
        text = captured.get()
        if text.strip():
            console.print()
            console.out(text, end="", highlight=False)
    except Exception:  # noqa: BLE001 - a teaching aid must never break `check`
        return


def _has_command(name: str) -> bool:
    try:
        from attn_practice.cli import cli
    except ImportError:
        return False
    return name in getattr(cli, "commands", {})


# ------------------------------------------------------------------ hint
def render_hints(console: Console, ex: Exercise, revealed: int, *, newly: bool) -> None:
    from rich.markdown import Markdown

    total = len(ex.hints)
    console.print(Text(f"{ex.id} · {ex.title}", style="bold"))
    if revealed == 0:
        console.print("No hints revealed yet.")
    for i, h in enumerate(ex.hints[:revealed], 1):
        style = "yellow" if newly and i == revealed else "dim"
        new = " (new)" if newly and i == revealed else ""
        console.print(Panel(Markdown(h), title=f"hint {i} of {total}{new}", title_align="left",
                            border_style=style, box=box.ROUNDED))
    if not newly and revealed >= total:
        console.print(f"All {total} hints are revealed. `attn-practice show {ex.id}` has the lesson.")
    elif revealed < total:
        left = total - revealed
        console.print(f"({left} more: run `attn-practice hint {ex.id}` again)")


# ------------------------------------------------------------------ status
def render_status(console: Console, ws: Workspace, catalog: Sequence[Exercise], state: State) -> None:
    short = console.width < 100  # "Scores" rather than "Scores: how well does each query ..."
    table = Table(title=Text(f"Progress in {ws.root}", style="bold"), title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("step", no_wrap=True)
    table.add_column("title")
    table.add_column("state", no_wrap=True)
    table.add_column("hints used", justify="right", no_wrap=True)
    for ex in catalog:
        st = state.step(ex.id)
        style = STATE_STYLE.get(st.status, "")
        title = ex.title.split(":")[0] if short else ex.title
        table.add_row(ex.id + (" (bonus)" if ex.bonus else ""), title,
                      Text(f"{STATE_ICON.get(st.status, ' ')} {st.status}", style=style),
                      f"{st.hints}/{len(ex.hints)}")
    console.print(table)
    core = [e for e in catalog if not e.bonus]
    done = sum(state.step(e.id).status == "passed" for e in core)
    console.print(f"Core steps passed: {done}/{len(core)}")
    nxt = next((e for e in catalog if state.step(e.id).status != "passed"), None)
    if nxt is not None:
        console.print(hanging("Next:", f"{nxt.id} ({nxt.file}): `attn-practice show {nxt.id}` to read "
                              "the lesson, then `attn-practice check`."))


# ------------------------------------------------------------------ show
def render_lesson(console: Console, ex: Exercise) -> None:
    from rich.markdown import Markdown

    kind = "bonus step" if ex.bonus else "step"
    # Long titles go inside the panels: a panel title is cut off, not wrapped, at 80 columns.
    console.print(Panel(Group(Text(ex.title, style="bold"), Text(""), Markdown(ex.lesson)),
                        title=f"{ex.id} ({kind}) · the lesson", title_align="left", border_style="blue"))
    console.print(Panel(Group(Text.assemble("Write ", (ex.signature, "bold"), " in ",
                                            (ex.file, "bold"), ":"), Text(""), Markdown(ex.task)),
                        title=f"{ex.id} · your task", title_align="left", border_style="green"))
    console.print(hanging("When ready:", f"attn-practice check {ex.id}    (stuck? attn-practice hint "
                          f"{ex.id})"))


# ------------------------------------------------------------------ solution
def render_solution(console: Console, ex: Exercise) -> None:
    from rich.markdown import Markdown
    from rich.syntax import Syntax

    from attn_practice.reference import attention

    fn = attention.FUNCTIONS[ex.function]
    console.print(Panel(Syntax(inspect.getsource(fn), "python", theme="ansi_dark", word_wrap=True),
                        title=f"reference {ex.function} ({ex.id})", title_align="left"))
    if ex.solution_note:
        console.print(Markdown(ex.solution_note))
