"""The `attn-practice` command: parse, call the engine, render. Nothing else.

Heavy imports (pytest, Hypothesis, NumPy, the engine) happen inside the
commands that need them, so `attn-practice --help` stays instant.
Exit codes: 0 passed, 1 failed, 2 usage error, 3 internal error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from . import __version__

if TYPE_CHECKING:
    from rich.console import Console

    from .grader.catalog import Exercise
    from .grader.workspace import Workspace

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class Problem(click.ClickException):
    """A clear, expected problem: printed without a traceback."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        from rich.text import Text

        # Text, not markup: a path or step name with [brackets] is printed as it is.
        # soft_wrap: a long path or step list stays on one line for logs and copy-paste.
        error_console().print(Text.assemble(("error: ", "bold red"), self.format_message()),
                              soft_wrap=True)


def console() -> Console:
    """stdout: colours on a terminal, plain text when piped; rich honours NO_COLOR."""
    from rich.console import Console

    return Console(highlight=False, emoji=False)


def error_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, emoji=False)


def _workspace() -> Workspace:
    from .grader.workspace import NotInWorkspace, find_workspace

    try:
        return find_workspace()
    except NotInWorkspace as exc:
        raise Problem(str(exc)) from None


def _step(name: str) -> Exercise:
    from .grader.catalog import UnknownStep, resolve_step

    try:
        return resolve_step(name)
    except UnknownStep as exc:
        raise Problem(str(exc)) from None


def _exit(code: int) -> NoReturn:
    """End a command with `code` (Click ignores return values in standalone mode)."""
    click.get_current_context().exit(code)


def _warn(messages: list[str]) -> None:
    from rich.text import Text

    for m in messages:
        error_console().print(Text.assemble(("warning: ", "bold yellow"), m))


def _state_error(ws: Workspace, exc: OSError) -> Problem:
    return Problem(f"could not write {ws.state_path}: {exc.strerror or exc}. "
                   "Check that the workspace folder is writable.", code=EXIT_INTERNAL)


#: Command groups that live beside their engines (CI set-ups, teaching tools),
#: imported only when used: `check` need not pay for them.
LAZY_COMMANDS = {
    "ci": (".grader.ci_commands", "ci"),
    "selftest": (".grader.selftest_command", "selftest"),
    "explore": (".grader.teaching", "explore"),
    "watch": (".grader.teaching", "watch"),
}


class AttnPracticeGroup(click.Group):
    """A group whose `main` maps every outcome to the documented exit code.

    Doing it here rather than only in the console-script `main()` means
    `python -m attn_practice`, Click's CliRunner and any other caller of
    `cli.main()` all get 0 passed / 1 failed / 2 usage / 3 internal, and never
    a grader traceback.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in LAZY_COMMANDS:
            import importlib

            module, attr = LAZY_COMMANDS[cmd_name]
            try:
                command = getattr(importlib.import_module(module, __package__), attr, None)
            except ImportError:
                return None
            if isinstance(command, click.Command):
                self.add_command(command, cmd_name)
            else:
                command = None
        return command

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        sys.exit(_run(lambda: super(AttnPracticeGroup, self).main(
            args, prog_name or "attn-practice", complete_var, standalone_mode=False, **extra)))


def _run(call: Any) -> int:
    """Call the CLI and turn its result or exception into an exit code (printing any message)."""
    try:
        rv = call()
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            _say("Interrupted.")
            return 130
        _say("Aborted.")
        return EXIT_FAILED
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.UsageError as exc:
        exc.show()
        return EXIT_USAGE
    except click.ClickException as exc:
        exc.show()
        return int(exc.exit_code)
    except KeyboardInterrupt:
        _say("Interrupted.")
        return 130
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_INTERNAL)
    except OSError as exc:
        if os.environ.get("ATTN_PRACTICE_DEBUG"):
            raise
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        _say(f"error: {exc.strerror or exc}{where}. attn-practice could not read or write a file it "
             "needs; check the folder's permissions and free space.", "bold red")
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are turned into words
        if os.environ.get("ATTN_PRACTICE_DEBUG"):
            raise
        _say(f"internal error: {type(exc).__name__}: {exc}\n"
             "This is a bug in attn-practice, not in your code. Re-run with ATTN_PRACTICE_DEBUG=1 "
             "for details and please report it.", "bold red")
        return EXIT_INTERNAL
    if isinstance(rv, bool) or not isinstance(rv, int):
        return EXIT_PASSED
    return rv


def _say(message: str, style: str = "") -> None:
    from rich.text import Text

    error_console().print(Text(message, style=style))


@click.group(cls=AttnPracticeGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="attn-practice")
def cli() -> None:
    """Practise the attention mechanism step by step, with feedback that teaches.

    \b
    Start here:
      attn-practice start          # create ./attention-practice
      cd attention-practice
      attn-practice show step1     # read the lesson
      attn-practice check          # check your first unfinished step
    """


# ------------------------------------------------------------------ start
@cli.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
def start(directory: Path | None) -> int:
    """Create a practice workspace (default: ./attention-practice).

    Running it again on an existing workspace only adds missing files.

    \b
    Example:
      attn-practice start
      attn-practice start ~/attention
    """
    from .grader.workspace import DEFAULT_DIR, create_workspace

    directory = directory or Path(DEFAULT_DIR)
    try:
        result = create_workspace(directory)
    except (FileExistsError, NotADirectoryError, PermissionError) as exc:
        raise Problem(f"cannot create a workspace at {directory}: {exc}") from None
    from .grader.reports.learner import render_start

    _warn(result.warnings)
    render_start(console(), result, directory)
    return EXIT_PASSED


# ------------------------------------------------------------------ check
@cli.command()
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
    from .grader.prestart import prestart

    prestart()  # the sandbox server starts while the engine is imported
    from .grader.catalog import load_catalog
    from .grader.practice import first_unpassed, run_check
    from .grader.reports.learner import render_check, render_check_header

    chosen = [_step(step)] if step and not all_steps else None  # a bad name fails before anything else
    if step and all_steps:
        raise Problem("give either a STEP or --all, not both")
    ws = _workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    _warn(state.warnings)
    out = console()
    if all_steps:
        steps = list(catalog)
    elif chosen:
        steps = chosen
    else:
        nxt = first_unpassed(state, catalog)
        if nxt is None:
            out.print("[bold green]Every step has passed.[/] Well done! Check one again with "
                      "`attn-practice check STEP`, or all of them with `attn-practice check --all`.")
            return EXIT_PASSED
        steps = [nxt]
    render_check_header(out, steps, chosen=not step and not all_steps)
    spinner = out.status(f"Checking {', '.join(e.id for e in steps)}…", spinner="dots") \
        if out.is_terminal else None
    if spinner is not None:
        spinner.start()

    def show(result: Any) -> None:
        if spinner is not None:
            spinner.stop()
        render_check(out, result, verbose=verbose)

    try:
        # rendered inside run_check, while the engine's sandboxes can still run the worked example
        outcome = run_check(ws, steps, state, reference_steps=reference_steps, then=show)
    finally:
        if spinner is not None:
            spinner.stop()
    return EXIT_PASSED if outcome.report.passed else EXIT_FAILED


# ------------------------------------------------------------------ hint
@cli.command()
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
    from .grader.catalog import load_catalog
    from .grader.practice import first_unpassed
    from .grader.reports.learner import render_hints

    ex = _step(step) if step else None
    ws = _workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    _warn(state.warnings)
    if ex is None:
        ex = first_unpassed(state, catalog) or catalog[0]
    newly = False

    def reveal(st_all: Any) -> None:
        nonlocal newly
        st = st_all.step(ex.id)
        newly = st.hints < len(ex.hints)
        if newly:
            st.hints += 1

    try:
        state = ws.update_state(reveal, catalog)
    except OSError as exc:
        raise _state_error(ws, exc) from None
    render_hints(console(), ex, state.step(ex.id).hints, newly=newly)
    return EXIT_PASSED


# ------------------------------------------------------------------ status
@cli.command()
def status() -> int:
    """Show your progress: each step, its state and the hints you used.

    \b
    Example:
      attn-practice status
    """
    from .grader.catalog import load_catalog
    from .grader.reports.learner import render_status

    ws = _workspace()
    catalog = load_catalog()
    state = ws.load_state(catalog)
    _warn(state.warnings)
    render_status(console(), ws, catalog, state)
    return EXIT_PASSED


# ------------------------------------------------------------------ reset
@cli.command()
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
    ex = _step(step)
    ws = _workspace()
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

    def forget(state: Any) -> None:
        state.step(ex.id).status = "not started"

    try:
        state = ws.update_state(forget)
    except OSError as exc:
        raise _state_error(ws, exc) from None
    _warn(state.warnings)
    msg = f"Restored {path.name} from the stub."
    if backup is not None:
        msg += f" Your previous version is in {backup.relative_to(ws.root)}."
    else:
        msg += " (It was still the stub, or missing, so there was nothing to back up.)"
    out.print(msg, markup=False)
    return EXIT_PASSED


# ------------------------------------------------------------------ show
@cli.command()
@click.argument("step", required=False)
def show(step: str | None) -> int:
    """Show the lesson and the task for STEP (default: your current step).

    Works anywhere, also outside a workspace.

    \b
    Examples:
      attn-practice show step1
      attn-practice show 3
    """
    from .grader.catalog import load_catalog
    from .grader.reports.learner import render_lesson

    if step is None:
        from .grader.practice import first_unpassed
        from .grader.workspace import NotInWorkspace, find_workspace

        catalog = load_catalog()
        try:
            state = find_workspace().load_state(catalog)
            _warn(state.warnings)
            ex = first_unpassed(state, catalog) or catalog[0]
        except NotInWorkspace:
            ex = catalog[0]
    else:
        ex = _step(step)
    render_lesson(console(), ex)
    return EXIT_PASSED


# ------------------------------------------------------------------ solution
@cli.command()
@click.argument("step")
def solution(step: str) -> int:
    """Show the reference solution for STEP, once you have passed it.

    \b
    Example:
      attn-practice solution step3
    """
    from .grader.reports.learner import render_solution

    ex = _step(step)
    ws = _workspace()
    state = ws.load_state()
    _warn(state.warnings)
    st = state.step(ex.id)
    if st.status != "passed" and not st.passed_at:
        raise Problem(f"{ex.id} has not passed yet: the solution unlocks once it does. "
                      f"Try `attn-practice hint {ex.id}`.", code=EXIT_FAILED)
    render_solution(console(), ex)
    return EXIT_PASSED


# ------------------------------------------------------------------ grade
FORMAT_CHOICES = ["rich", "json", "junit", "gradescope", "github", "csv"]


@cli.command()
@click.argument("submissions", nargs=-1, required=True,
                type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES),
              help="Report format (default: rich on a terminal, json otherwise).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write the report to FILE.")
@click.option("--course", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="A course file (YAML): steps, points, time limits, examples, extra suites.")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="Submissions graded at once "
              "(default: the CPU count).")
@click.option("--no-cache", is_flag=True, help="Re-grade even if a cached result exists.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where cached results live.")
@click.option("--dask", "dask_address", metavar="ADDRESS",
              help="Grade on a Dask cluster (tcp://host:8786, or 'local').")
@click.option("-v", "--verbose", is_flag=True, help="Show every failing test in full (rich).")
def grade(submissions: tuple[Path, ...], fmt: str | None, out: Path | None, course: Path | None,
          jobs: int | None, no_cache: bool, cache_dir: Path | None, dask_address: str | None,
          verbose: bool) -> int:
    """Grade one or more SUBMISSION folders (for course staff and CI).

    Learner code runs sandboxed; the same submission always gets the same grade.

    \b
    Examples:
      attn-practice grade student1/
      attn-practice grade subs/* --format csv --out grades.csv
      attn-practice grade . --format gradescope --out /autograder/results/results.json
    """
    from .grader.batch import GradeRequest, run_grading
    from .grader.course import CourseError, load_course

    try:
        course_obj = load_course(course) if course else None
    except CourseError as exc:
        raise Problem(str(exc)) from None
    fmt = fmt or ("rich" if sys.stdout.isatty() and out is None else "json")
    request = GradeRequest(
        submissions=[Path(s) for s in submissions],
        labels=[str(s) for s in submissions],
        course=course_obj,
        jobs=jobs,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        dask_address=dask_address,
        progress=fmt != "rich" and sys.stderr.isatty() and len(submissions) > 1 or
        (fmt == "rich" and len(submissions) > 1),
    )
    try:
        reports = run_grading(request)
    except RuntimeError as exc:
        raise Problem(str(exc)) from None
    from .grader.reports.output import emit

    emit(reports, fmt, out=out, console=console(), verbose=verbose)
    _exit(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)


def on_error(message: str, code: int) -> NoReturn:
    _say(message)
    sys.exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point: maps every outcome to an exit code."""
    # Many images set PYTHONDONTWRITEBYTECODE; recompiling our modules, pytest's and
    # Hypothesis's on every command costs a learner ~0.2 s each time.
    sys.dont_write_bytecode = False
    exit_now(_run(lambda: cli.main(args=argv, prog_name="attn-practice", standalone_mode=False)))


def exit_now(code: int) -> NoReturn:
    """End the process without tearing the interpreter down.

    Unloading NumPy, pytest and Hypothesis module by module takes ~0.15 s
    after every command, time a learner waits for nothing. Exit handlers still
    run (temporary folders, worker pools, logging) and both streams are
    flushed first; then the operating system reclaims the rest at once.
    """
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


if __name__ == "__main__":
    main()
