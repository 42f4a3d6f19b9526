"""The learner's commands: `start`, `check`, `hint`, `status`, `reset`, `show`, `solution`.

Each parses its arguments, calls the teaching layer and renders through
`teaching.screens`. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from attn_practice.grader.commands.common import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_PASSED,
    Problem,
    console,
    imports_done,
    state_error,
    warn,
    workspace,
)
from attn_practice.grader.commands.common import step as step_named


# ------------------------------------------------------------------ start
@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
def start(directory: Path | None) -> int:
    """Create a practice workspace (default: ./attention-practice).

    Running it again on an existing workspace only adds missing files.

    \b
    Example:
      attn-practice start
      attn-practice start ~/attention
    """
    from attn_practice.grader.teaching.workspace import DEFAULT_DIR, create_workspace

    directory = directory or Path(DEFAULT_DIR)
    try:
        result = create_workspace(directory)
    except (FileExistsError, NotADirectoryError, PermissionError) as exc:
        raise Problem(f"cannot create a workspace at {directory}: {exc}") from None
    from attn_practice.grader.teaching.screens import render_start

    warn(result.warnings)
    render_start(console(), result, directory)
    return EXIT_PASSED


# ------------------------------------------------------------------ check
@click.command()
@click.argument("step", required=False)
@click.option("--all", "all_steps", is_flag=True, help="Check every step (core and bonus).")
@click.option("--reference-steps", is_flag=True,
              help="Let this step import the reference versions of earlier steps instead of yours.")
@click.option("-v", "--verbose", is_flag=True, help="Show every failing test in full.")
def check(step: str | None, all_steps: bool, reference_steps: bool, verbose: bool) -> int:
    """Check a step against the hidden tests (default: the first step not yet passed).

    \b
    Examples:
      attn-practice check            # the first step you have not passed
      attn-practice check step2      # or: check 2, check step2_scale
      attn-practice check --all
    """
    from attn_practice.grader.sandbox.prestart import prestart

    prestart()  # the sandbox server starts while the engine is imported
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.teaching.practice import first_unpassed, run_check
    from attn_practice.grader.teaching.screens import render_check, render_check_header, working

    imports_done()
    chosen = [step_named(step)] if step and not all_steps else None  # a bad name fails before anything else
    if step and all_steps:
        raise Problem("give either a STEP or --all, not both")
    ws = workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    warn(state.warnings)
    out = console()
    if all_steps:
        steps = list(catalog)
    elif chosen:
        steps = chosen
    else:
        nxt = first_unpassed(state, catalog)
        if nxt is None:
            out.print("[bold green]Every step has passed.[/] Well done! Check one again with "
                      "`attn-practice check STEP`, or all of them with `attn-practice check --all`.",
                      soft_wrap=not out.is_terminal)
            return EXIT_PASSED
        steps = [nxt]
    render_check_header(out, steps, chosen=not step and not all_steps)
    with working(out, f"Checking {', '.join(e.id for e in steps)}…"):
        outcome = run_check(ws, steps, state, reference_steps=reference_steps)
    render_check(out, outcome, verbose=verbose)
    return EXIT_PASSED if outcome.report.passed else EXIT_FAILED


# ------------------------------------------------------------------ hint
@click.command()
@click.argument("step", required=False)
def hint(step: str | None) -> int:
    """Reveal the next hint for STEP (default: your current step).

    Hints are revealed one at a time and the count is remembered; running it
    again after the last hint (or after you pass) shows all revealed hints.

    \b
    Examples:
      attn-practice hint step3
      attn-practice hint 3
    """
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.teaching.practice import first_unpassed
    from attn_practice.grader.teaching.screens import render_hints

    ex = step_named(step) if step else None
    ws = workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    warn(state.warnings)
    if ex is None:
        ex = first_unpassed(state, catalog) or catalog[0]
    try:
        state, newly = ws.reveal_hint(ex, catalog)
    except OSError as exc:
        raise state_error(ws, exc) from None
    render_hints(console(), ex, state.step(ex.id).hints, newly=newly)
    return EXIT_PASSED


# ------------------------------------------------------------------ status
@click.command()
def status() -> int:
    """Show your progress: each step, its state and the hints you used.

    \b
    Example:
      attn-practice status
    """
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.teaching.screens import render_status

    ws = workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    warn(state.warnings)
    render_status(console(), ws, catalog, state)
    return EXIT_PASSED


# ------------------------------------------------------------------ reset
@click.command()
@click.argument("step")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(step: str, yes: bool) -> int:
    """Restore STEP's stub after asking; your current file is backed up first.

    The backup goes to backups/<file>-<date>-<time>.py inside the workspace.
    Hint counts are kept.

    \b
    Examples:
      attn-practice reset step2
      attn-practice reset 2 --yes     # no question asked
    """
    ex = step_named(step)
    ws = workspace()
    path = ws.file_for(ex)
    out = console()
    if not yes:
        exists = os.path.lexists(path)
        question = (f"Replace {ex.file} with a fresh stub? (your version is backed up first)"
                    if exists else f"{ex.file} is missing. Put a fresh stub there?")
        try:
            ok = click.confirm(question, default=False)
        except click.exceptions.Abort:
            raise Problem("no answer to the question, so nothing changed. Use "
                          f"`attn-practice reset {ex.id} --yes` to reset without asking.") from None
        if not ok:
            out.print("Nothing changed.")
            return EXIT_PASSED
    try:
        backup = ws.reset(ex)
    except OSError as exc:
        raise Problem(f"could not reset {ex.file}: {exc.strerror or exc}", code=EXIT_INTERNAL) from None

    try:
        state = ws.forget_progress(ex)
    except OSError as exc:
        raise state_error(ws, exc) from None
    warn(state.warnings)
    msg = f"Restored {path.name} from the stub."
    if backup is not None:
        msg += f" Your previous version is in {backup.relative_to(ws.root)}."
    else:
        msg += " (It was still the stub, or missing, so there was nothing to back up.)"
    out.print(msg, markup=False, soft_wrap=not out.is_terminal)  # a path stays whole
    return EXIT_PASSED


# ------------------------------------------------------------------ show
@click.command()
@click.argument("step", required=False)
def show(step: str | None) -> int:
    """Show the lesson and the task for STEP (default: your current step).

    Works anywhere, also outside a workspace.

    \b
    Examples:
      attn-practice show step1
      attn-practice show 3
    """
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.teaching.screens import render_lesson

    if step is None:
        from attn_practice.grader.teaching.practice import first_unpassed
        from attn_practice.grader.teaching.workspace import NotInWorkspace, find_workspace

        catalog = load_catalog()
        try:
            state = find_workspace().load_state(catalog)
            warn(state.warnings)
            ex = first_unpassed(state, catalog) or catalog[0]
        except NotInWorkspace:
            ex = catalog[0]
    else:
        ex = step_named(step)
    render_lesson(console(), ex)
    return EXIT_PASSED


# ------------------------------------------------------------------ solution
@click.command()
@click.argument("step")
def solution(step: str) -> int:
    """Show the reference solution for STEP, once you have passed it.

    \b
    Example:
      attn-practice solution step3
    """
    from attn_practice.grader.teaching.screens import render_solution

    ex = step_named(step)
    ws = workspace()
    state = ws.load_state()
    warn(state.warnings)
    st = state.step(ex.id)
    if not st.passed and not st.passed_at:
        raise Problem(f"{ex.id} has not passed yet: the solution unlocks once it does. "
                      f"Try `attn-practice hint {ex.id}`.", code=EXIT_FAILED)
    render_solution(console(), ex)
    return EXIT_PASSED


COMMANDS = (start, check, hint, status, reset, show, solution)
