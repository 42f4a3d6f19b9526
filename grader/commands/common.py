"""What every command shares: exit codes, the `Problem` error, the two consoles.

One convention for every Click command (`cli.py`'s core and the groups in this
package): an expected problem is raised as `Problem(message, code)`, printed by
the group without a traceback; results go to `console()`, warnings and errors
to `error_console()`. Importing this module costs only Click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from rich.console import Console

    from attn_practice.grader.catalog import Exercise
    from attn_practice.grader.teaching.workspace import Workspace

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


def workspace() -> Workspace:
    from attn_practice.grader.teaching.workspace import NotInWorkspace, find_workspace

    try:
        return find_workspace()
    except NotInWorkspace as exc:
        raise Problem(str(exc)) from None


def step(name: str) -> Exercise:
    from attn_practice.grader.catalog import UnknownStep, resolve_step

    try:
        return resolve_step(name)
    except UnknownStep as exc:
        raise Problem(str(exc)) from None


#: Commands that call `imports_done` once their heavy imports are over; every other
#: command gets the cyclic collector back as soon as it is chosen.
PAUSED_START = frozenset({"check", "grade"})


def pause_collector() -> None:
    """Switch the cyclic garbage collector off for a command's start-up (the console script only).

    Importing NumPy, pytest and Hypothesis creates hundreds of thousands of
    objects that live as long as the process; the collector scans them over
    and over while they are made (~8% of `check`). `imports_done` ends the pause.
    """
    import gc

    gc.disable()


def imports_done() -> None:
    """End the start-up pause: what is loaded now stays for good, so later collections skip it.

    A no-op when the collector is on (the pause is the console script's: in
    a test process or any other caller, nothing is frozen).
    """
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def exit_with(code: int) -> NoReturn:
    """End a command with `code` (Click ignores return values in standalone mode)."""
    click.get_current_context().exit(code)


def warn(messages: list[str]) -> None:
    if not messages:  # rich is imported only to print something
        return
    from rich.text import Text

    for m in messages:
        error_console().print(Text.assemble(("warning: ", "bold yellow"), m))


def state_error(ws: Workspace, exc: OSError) -> Problem:
    return Problem(f"could not write {ws.state_path}: {exc.strerror or exc}. "
                   "Check that the workspace folder is writable.", code=EXIT_INTERNAL)


def say(message: str, style: str = "") -> None:
    from rich.text import Text

    error_console().print(Text(message, style=style))
