"""What a learner sees for start, check, hint, status, show and solution.

Everything here is read in a terminal that may be 80 columns wide, or piped
into a file: panels are kept for prose (the lesson, hints, the solution),
and the check report uses the box-free layout of `terminal`.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import shlex
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.text import Text

from attn_practice.exercises.lesson_data import worked_example
from attn_practice.grader.catalog import Exercise, load_catalog, resolve_step
from attn_practice.grader.reports._text import clean
from attn_practice.grader.reports.terminal import hanging, render_step
from attn_practice.grader.results import Status, StepResult
from attn_practice.grader.teaching.outcome import Row, Why, fmt
from attn_practice.grader.teaching.workspace import Progress, changed_since_check, stale_steps

if TYPE_CHECKING:
    from rich.console import RenderableType

    from attn_practice.grader.teaching.outcome import CheckOutcome
    from attn_practice.grader.teaching.workspace import StartResult, State, Workspace

STATE_STYLE = {Progress.PASSED: "green", Progress.FAILED: "red", Progress.NOT_STARTED: "dim"}
STATE_ICON = {Progress.PASSED: "✓", Progress.FAILED: "✗", Progress.NOT_STARTED: "·"}
STALE_STYLE, STALE_ICON = "yellow", "!"
#: seconds of waiting after which the spinner says the check is still running
SLOW_AFTER = 2.0


@contextlib.contextmanager
def working(console: Console, label: str, *, after: float = SLOW_AFTER,
            tick: float = 1.0) -> Iterator[None]:
    """A spinner while the check runs; after `after` seconds its text says it is still running.

    Only on a terminal: piped output gets nothing extra (no spinner frames, no
    "still running" line in a log).
    """
    if not console.is_terminal:
        yield
        return
    status = console.status(label, spinner="dots")
    status.start()
    stop = threading.Event()

    def still_running() -> None:
        t0 = time.monotonic()
        if stop.wait(after):
            return
        while True:
            status.update(f"{label} still running after {time.monotonic() - t0:.0f} s: the hidden "
                          "tests call your code many times, and a slow call is stopped at its time "
                          "limit (Ctrl-C stops the check)")
            if stop.wait(tick):
                return

    thread = threading.Thread(target=still_running, name="attn-practice-working", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        status.stop()


def advice(console: Console, prefix: str | Text, body: str | Text, *, indent: int = 0) -> RenderableType:
    """A line of advice that holds commands: wrapped under itself on a terminal, one line piped.

    Piped into a file or a pager, a command split across two lines cannot be
    copied; there the terminal (or the reader) wraps it, not us.
    """
    if console.is_terminal:
        return hanging(prefix, body, indent=indent)
    head = prefix if isinstance(prefix, Text) else Text(prefix)
    return Text.assemble(" " * indent, head, " ", body if isinstance(body, Text) else Text(body))


def say(console: Console, prefix: str | Text, body: str | Text, *, indent: int = 0) -> None:
    """Print `advice(...)`; soft-wrapped when piped so no command is split."""
    console.print(advice(console, prefix, body, indent=indent), soft_wrap=not console.is_terminal)


def render_step_for_learner(console: Console, step: StepResult, *, verbose: bool = False) -> None:
    """`render_step`, with the notes (which often hold commands) kept whole when piped."""
    render_step(console, replace(step, notes=()), verbose=verbose)
    if step.notes:
        console.print()
    for note in step.notes:
        say(console, Text("note:", style="cyan"), clean(note), indent=2)


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


def render_check(console: Console, outcome: CheckOutcome, *, verbose: bool = False,
                 watching: bool = False) -> None:
    """A check's report, then what to do next.

    `watching`: drawn inside `attn-practice watch`, where saving the file
    re-checks and keys do the rest, so the advice says "save" and "press h".
    """
    report = outcome.report
    for i, s in enumerate(report.steps):
        if i:
            console.print()
        if s.status is Status.MISSING:
            _render_missing(console, s)
        else:
            render_step_for_learner(console, for_watch(s) if watching else s, verbose=verbose)
    failed = [s for s in report.steps if not s.passed]
    if failed and outcome.worked_example:
        console.print()
        render_worked_example(console, outcome.worked_example, watching=watching)
    console.print()
    if len(report.steps) > 1:
        done = sum(s.passed for s in report.steps)
        console.print(Text(f"{done} of {len(report.steps)} steps passed.", style="bold"))
    if not failed:
        _render_passed(console, outcome, watching=watching)
    else:
        if see_it_at_work(outcome):  # e.g. `check --all`: the core is done, a bonus step is not
            say(console, Text("Core steps done.", style="bold green"), "See it at work: "
                "attn-practice explore sentence    (now with your own attention)")
            console.print()
        _render_what_now(console, outcome, failed[0], watching=watching)
    for w in outcome.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))


_WATCH_WORDS = (
    (re.compile(r",? and check again\b"), ", and save: watch checks it again"),
    (re.compile(r"\bcheck again\b"), "save again"),
    (re.compile(r"`attn-practice hint(?: step\d+)?` helps you start"), "Press h for a hint"),
    (re.compile(r"`attn-practice hint(?: step\d+)?`"), "press h"),
)


def for_watch(step: StepResult) -> StepResult:
    """The step's advice as it applies inside `watch`: save to re-check, press h for a hint."""
    def words(text: str) -> str:
        for pattern, instead in _WATCH_WORDS:
            text = pattern.sub(instead, text)
        return text

    tests = tuple(replace(t, failure=replace(t.failure, hint=words(t.failure.hint)))
                  if t.failure is not None and t.failure.hint else t for t in step.tests)
    return replace(step, tests=tests)


def _render_passed(console: Console, outcome: CheckOutcome, *, watching: bool) -> None:
    report = outcome.report
    nxt = outcome.next_step
    if nxt is None:
        console.print(Text.assemble(("All steps pass.", "bold green"),
                                    " You have built attention from scratch!"))
    else:
        done_ids = ", ".join(s.id for s in report.steps)
        console.print(hanging(Text("Passed", style="bold green"),
                              Text.assemble((done_ids + ".", "bold green"), " Next: ",
                                            (nxt.id, "bold"), f" · {nxt.title}")))
        if not watching:  # watch moves on by itself and says so
            say(console, " ", f"attn-practice show {nxt.id}    then edit {nxt.file} and run "
                              "attn-practice check")
    if see_it_at_work(outcome):
        say(console, " ", "See it at work: attn-practice explore sentence    (now with your "
                          "own attention)")


def see_it_at_work(outcome: CheckOutcome) -> bool:
    """True when this check completed the core steps: `explore sentence` now runs their code."""
    core = [e for e in load_catalog() if not e.bonus]
    checked_core = any(s.passed and s.id in {e.id for e in core} for s in outcome.report.steps)
    return checked_core and all(outcome.state.step(e.id).passed for e in core)


def _render_what_now(console: Console, outcome: CheckOutcome, first: StepResult, *,
                     watching: bool) -> None:
    again = (f"Save {first.file} and watch checks it again." if watching
             else f"Run `attn-practice check {first.id}` again.")
    console.print(Text("What now:", style="bold"))
    cause = outcome.blame.get(first.id)
    if first.status is Status.MISSING:
        say(console, " ", f"Restore {first.file} with `attn-practice reset {first.id}`, then run "
                          f"`attn-practice check {first.id}`.")
    elif cause is not None:
        dep = resolve_step(cause.cause)
        check_dep = f"run `attn-practice check {dep.id}`"
        if watching:
            check_dep = f"press n until watch reaches {dep.id}, or {check_dep}"
        what = {
            Why.NOT_WRITTEN: f"{first.file} imports {dep.file}, whose {dep.function} is not written "
                             f"yet ({dep.id}): write it first (`attn-practice show {dep.id}`), then "
                             f"{check_dep}.",
            Why.RAISED: f"The error happened inside {dep.file} (your {dep.function}, {dep.id}), "
                        f"which {first.file} imports: {check_dep} and fix {dep.function} first.",
            Why.FAILS: f"Your step {resolve_step(first.id).number} calls your `{dep.function}` "
                       f"(step {dep.number}), which fails: fix {dep.file} first; to see why, "
                       f"{check_dep}.",
            Why.UNCHECKED: f"{first.file} imports your {dep.function} from {dep.file} ({dep.id}), "
                           f"which you have not checked yet: {check_dep} first; if it passes, the "
                           f"problem is in {first.file}.",
        }[cause.why]
        say(console, "  1.", what)
        say(console, "  2.", f"{again} To try {first.id} on its own, with the reference versions "
                             f"of the earlier steps: `attn-practice check {first.id} "
                             "--reference-steps`.")
    else:
        say(console, "  1.", f"Fix the first problem above in {first.file}.")
        say(console, "  2.", again)
    used = outcome.state.step(first.id).hints
    total = outcome.hints_total.get(first.id, 0)
    hint = "press h" if watching else f"`attn-practice hint {first.id}`"
    if used < total:
        say(console, "  Stuck?", f"{hint} ({used} of {total} hints revealed), or reread the "
                                 f"lesson: `attn-practice show {first.id}`.")
    else:
        say(console, "  Stuck?", f"all {total} hints are revealed: {hint} shows them again.")


def _render_missing(console: Console, s: StepResult) -> None:
    console.print(hanging(Text("·", style="bold"), Text.assemble(
        (f"Step {resolve_step(s.id).number}{' (bonus)' if s.bonus else ''} · ", "bold"),
        (s.title, "bold"))))
    say(console, " ", f"{s.file} is missing from your workspace. `attn-practice reset {s.id}` "
                      "puts a fresh stub back (so does `attn-practice start`, which only adds "
                      "missing files).")


# ------------------------------------------------------------------ worked example
def _mark(r: Row) -> Text:
    if r.ok:
        return Text("✓", style="green")
    if r.pending:
        return Text("·", style="dim")
    if r.unloaded:
        return Text("✗ did not load", style="bold red")
    if r.first_divergence:
        return Text("✗ first difference", style="bold red")
    if r.inherited:
        return Text("✗ from above", style="yellow")
    return Text("✗", style="red")


def render_worked_example(console: Console, rows: Sequence[Row], *, watching: bool = False) -> None:
    """The worked example as a table: stage, the lesson's numbers, yours, where they first differ."""
    from rich.panel import Panel
    from rich.table import Table

    if not rows:
        return
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold", padding=(0, 2, 0, 0))
    table.add_column("stage", no_wrap=True)
    table.add_column("lesson", no_wrap=True)
    table.add_column("yours")
    table.add_column("", no_wrap=True)
    for r in rows:
        if r.got is None:
            got = Text(r.problem, style="dim" if r.pending else "red")
        elif r.problem:
            got = Text(f"{fmt(r.got)} ({r.problem})", style="red")
        else:
            got = Text(fmt(r.got), style="green" if r.ok else "red")
        table.add_row(f"{resolve_step(r.step).number} {r.stage}", fmt(r.expected), got, _mark(r))
    ex = worked_example()
    lines: list[RenderableType] = [Text(f"q = {fmt(ex.q)}   K = {fmt(ex.keys)}\n"
                                        f"V = {fmt(ex.values)}   d_k = {ex.d_k}", style="dim"),
                                   table]
    chained = [r for r in rows if r.stage != "attention"]
    if len(chained) > 1:
        calls = " → ".join(r.call for r in chained)
        lines.append(Text(f"each stage gets your previous answer: {calls}", style="dim"))
    lines.append(_worked_example_advice(rows, watching=watching))
    console.print(Panel(Group(*lines), title="the lesson's worked example, computed by your code",
                        title_align="left", border_style="blue", expand=False))


def _worked_example_advice(rows: Sequence[Row], *, watching: bool) -> Text:
    """One sentence that fits what the rows show (a file that did not load is not a wrong number)."""
    again = "save" if watching else "save and check again"
    first = next((r for r in rows if r.first_divergence), None)
    if first is None and any(r.ok for r in rows):
        return Text("Your code reproduces the lesson's numbers at every stage it ran.", style="green")
    if first is None:
        return Text(f"Nothing to compare yet: write the function, {again}.", style="dim")
    ex = resolve_step(first.step)
    if first.unloaded:
        return Text(f"{ex.file} did not load, so there are no numbers of yours to compare with the "
                    f"lesson's yet: fix the error shown above, then {again}.")
    if first.got is None:
        return Text.assemble(f"{ex.function} gave no answer at ", (first.stage, "bold"),
                             f" ({first.problem}): the report above says why.")
    return Text.assemble("Your numbers first differ at ", (first.stage, "bold"),
                         f" ({first.step}, {first.call}). Work that stage out by hand "
                         "from the lesson's numbers above it.")


# ------------------------------------------------------------------ hint
def render_hints(console: Console, ex: Exercise, revealed: int, *, newly: bool,
                 watching: bool = False) -> None:
    from rich import box
    from rich.markdown import Markdown
    from rich.panel import Panel

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
        console.print(f"All {total} hints are revealed. `attn-practice show {ex.id}` has the lesson.",
                      soft_wrap=not console.is_terminal)
    elif revealed < total:
        left = total - revealed
        more = "press h again" if watching else f"run `attn-practice hint {ex.id}` again"
        console.print(f"({left} more: {more})",
                      soft_wrap=not console.is_terminal)


# ------------------------------------------------------------------ status
def render_status(console: Console, ws: Workspace, catalog: Sequence[Exercise], state: State) -> None:
    from rich import box
    from rich.table import Table

    short = console.width < 100  # "Scores" rather than "Scores: how well does each query ..."
    table = Table(title=Text(f"Progress in {ws.root}", style="bold"), title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("step", no_wrap=True)
    table.add_column("title")
    table.add_column("state", no_wrap=True)
    table.add_column("hints used", justify="right", no_wrap=True)
    stale = stale_steps(ws, state, catalog)
    for ex in catalog:
        st = state.step(ex.id)
        title = ex.title.split(":")[0] if short else ex.title
        if ex.id in stale:
            cell = Text(f"{STALE_ICON} passed, stale", style=STALE_STYLE)
        elif st.checked and changed_since_check(ws, state, ex):  # its own file changed since
            cell = Text(f"{STALE_ICON} {st.status}, changed since", style=STALE_STYLE)
        else:
            cell = Text(f"{STATE_ICON[st.status]} {st.status}", style=STATE_STYLE[st.status])
        table.add_row(ex.id + (" (bonus)" if ex.bonus else ""), title, cell,
                      f"{st.hints}/{len(ex.hints)}")
    console.print(table)
    core = [e for e in catalog if not e.bonus]
    done = sum(state.step(e.id).passed for e in core)
    console.print(f"Core steps passed: {done}/{len(core)}")
    changed = [e for e in catalog if state.step(e.id).checked and changed_since_check(ws, state, e)]
    if changed:
        say(console, Text("changed:", style=STALE_STYLE),
            f"{', '.join(e.file for e in changed)} changed since {'its' if len(changed) == 1 else 'their'} "
            f"last check: its state above is the old file's. `attn-practice check "
            f"{changed[0].id}` checks it again.")
    for sid, deps in stale.items():
        names = ", ".join(f"{d.file}" for d in deps)
        say(console, Text("stale:", style=STALE_STYLE),
            f"{sid} passed with an earlier version of {names}, which it imports and which was "
            f"reset or changed since: `attn-practice check {sid}` to see whether it still passes.")
    nxt = next((e for e in catalog if not state.step(e.id).passed), None)
    if nxt is not None:
        say(console, "Next:", f"{nxt.id} ({nxt.file}): `attn-practice show {nxt.id}` to read "
                              "the lesson, then `attn-practice check`.")


# ------------------------------------------------------------------ show
def render_lesson(console: Console, ex: Exercise) -> None:
    from rich.markdown import Markdown
    from rich.panel import Panel

    kind = "bonus step" if ex.bonus else "step"
    # Long titles go inside the panels: a panel title is cut off, not wrapped, at 80 columns.
    console.print(Panel(Group(Text(ex.title, style="bold"), Text(""), Markdown(ex.lesson)),
                        title=f"{ex.id} ({kind}) · the lesson", title_align="left", border_style="blue"))
    # The task text opens by naming the function and the file: no header restating it.
    console.print(Panel(Markdown(ex.task), title=f"{ex.id} · your task", title_align="left",
                        border_style="green"))
    say(console, "When ready:", f"attn-practice check {ex.id}    (stuck? attn-practice hint {ex.id})")


# ------------------------------------------------------------------ solution
def render_solution(console: Console, ex: Exercise) -> None:
    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.syntax import Syntax

    from attn_practice.reference import attention

    fn = attention.FUNCTIONS[ex.function]
    console.print(Panel(Syntax(inspect.getsource(fn), "python", theme="ansi_dark", word_wrap=True),
                        title=f"reference {ex.function} ({ex.id})", title_align="left"))
    if ex.solution_note:
        console.print(Markdown(ex.solution_note))
