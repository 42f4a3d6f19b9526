"""What a learner sees for start, check, hint, status, show and solution."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..catalog import Exercise
from .terminal import render_step

if TYPE_CHECKING:
    from ..practice import CheckOutcome
    from ..workspace import StartResult, State, Workspace

STATE_STYLE = {"passed": "green", "failed": "red", "not started": "dim"}


def render_start(console: Console, result: StartResult, directory: Path) -> None:
    ws = result.workspace
    if result.existed:
        console.print(f"[bold]{ws.root}[/] is already a workspace.")
        if result.created:
            console.print("Added what was missing: " + ", ".join(result.created))
        else:
            console.print("Nothing was missing; none of your files were touched.")
    else:
        console.print(f"[bold green]Created your workspace[/] in [bold]{ws.root}[/]")
        for name in result.created:
            console.print(f"  + {name}")
        if result.kept:
            console.print("Kept your existing files: " + ", ".join(result.kept))
    console.print()
    console.print("Next:")
    console.print(f"  cd {directory}")
    console.print("  attn-practice show step1      # read the lesson")
    console.print("  # edit step1_scores.py, then:")
    console.print("  attn-practice check step1")


def render_check(console: Console, outcome: CheckOutcome, *, verbose: bool = False) -> None:
    report = outcome.report
    for s in report.steps:
        render_step(console, s, verbose=verbose)
        console.print()
    failed = [s for s in report.steps if not s.passed]
    if not failed:
        nxt = outcome.next_step
        if nxt is None:
            console.print("[bold green]All steps pass.[/] You have built attention from scratch! "
                          "See it at work: attn-practice explore sentence")
        else:
            done = ", ".join(s.id for s in report.steps)
            console.print(f"[bold green]Passed {done}.[/] Next: [bold]{nxt.id}[/] — {nxt.title}")
            console.print(f"  attn-practice show {nxt.id}    then edit {nxt.file}")
        return
    first = failed[0]
    used = outcome.state.step(first.id).hints
    total = outcome.hints_total.get(first.id, 0)
    console.print(f"[bold]What now:[/] fix the first problem above in {first.file}, then run "
                  f"`attn-practice check {first.id}` again.")
    if used < total:
        console.print(f"  Stuck? `attn-practice hint {first.id}` ({used} of {total} hints revealed).")


def render_hints(console: Console, ex: Exercise, revealed: int, *, newly: bool) -> None:
    console.print(Text(f"{ex.id} · {ex.title}", style="bold"))
    for i, h in enumerate(ex.hints[:revealed], 1):
        style = "yellow" if newly and i == revealed else "dim"
        console.print(Panel(Markdown(h), title=f"hint {i} of {len(ex.hints)}", title_align="left",
                            border_style=style, expand=False))
    if not newly:
        console.print("All hints are revealed. `attn-practice show " + ex.id + "` has the lesson.")
    elif revealed < len(ex.hints):
        console.print(f"({len(ex.hints) - revealed} more: run `attn-practice hint {ex.id}` again)")


def render_status(console: Console, ws: Workspace, catalog: Sequence[Exercise], state: State) -> None:
    table = Table(title=f"Progress in {ws.root}", title_justify="left")
    table.add_column("step")
    table.add_column("title")
    table.add_column("state")
    table.add_column("hints used", justify="right")
    for ex in catalog:
        st = state.step(ex.id)
        table.add_row(ex.id + (" (bonus)" if ex.bonus else ""), ex.title,
                      Text(st.status, style=STATE_STYLE.get(st.status, "")),
                      f"{st.hints}/{len(ex.hints)}")
    console.print(table)
    core = [e for e in catalog if not e.bonus]
    done = sum(state.step(e.id).status == "passed" for e in core)
    console.print(f"Core steps passed: {done}/{len(core)}")


def render_lesson(console: Console, ex: Exercise) -> None:
    kind = "bonus step" if ex.bonus else "step"
    console.print(Panel(Markdown(ex.lesson), title=f"{ex.id} ({kind}) · {ex.title}", title_align="left",
                        border_style="blue"))
    console.print(Panel(Markdown(ex.task), title=f"Your task: {ex.signature} in {ex.file}",
                        title_align="left", border_style="green"))
    console.print(f"When ready: attn-practice check {ex.id}    (stuck? attn-practice hint {ex.id})")


def render_solution(console: Console, ex: Exercise) -> None:
    from ...reference import attention

    fn = attention.FUNCTIONS[ex.function]
    console.print(Panel(Syntax(inspect.getsource(fn), "python", theme="ansi_dark"),
                        title=f"reference {ex.function}", title_align="left"))
    if ex.solution_note:
        console.print(Markdown(ex.solution_note))
