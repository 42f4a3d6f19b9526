"""The `attn-practice` command: parse, call the engine, render. Nothing else.

Heavy imports (pytest, Hypothesis, NumPy, the engine) happen inside the
commands that need them, so `attn-practice --help` stays instant.
Exit codes: 0 passed, 1 failed, 2 usage error, 3 internal error.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click

from attn_practice import __version__
from attn_practice.grader.commands import learn
from attn_practice.grader.commands.common import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_PASSED,
    EXIT_USAGE,
    PAUSED_START,
    imports_done,
    pause_collector,
)
from attn_practice.grader.commands.common import say as _say
from attn_practice.grader.commands.grade import grade

#: Command groups that live beside their engines (CI set-ups, teaching tools),
#: imported only when used: `check` need not pay for them.
LAZY_COMMANDS = {
    "ci": (".grader.commands.ci", "ci"),
    "selftest": (".grader.commands.selftest", "selftest"),
    "course": (".grader.commands.course", "course"),
    "explore": (".grader.commands.teaching", "explore"),
    "watch": (".grader.commands.teaching", "watch"),
    "report": (".grader.commands.report", "report"),
    "serve": (".grader.commands.serve", "serve"),
    "host": (".grader.commands.host", "host"),
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
            # No `except ImportError`: a bug in a lazily loaded group is an internal error
            # (exit 3, "this is a bug in attn-practice"), never "No such command".
            command = getattr(importlib.import_module(module, __package__), attr, None)
            if isinstance(command, click.Command):
                self.add_command(command, cmd_name)
            else:
                command = None
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name not in PAUSED_START:
            imports_done()  # the collector back on: only `check` and `grade` end the pause themselves
        return name, command, rest

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


for _command in (*learn.COMMANDS, grade):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point: maps every outcome to an exit code."""
    # Many images set PYTHONDONTWRITEBYTECODE; recompiling our modules, pytest's and
    # Hypothesis's on every command costs a learner ~0.2 s each time.
    sys.dont_write_bytecode = False
    # Hypothesis loads every installed package's plugin at import (trio's costs ~60 ms);
    # none is part of grading, and what else is installed must not shape a run (as for
    # pytest, whose plugin autoload is off too). Batch workers inherit this.
    os.environ["HYPOTHESIS_NO_PLUGINS"] = "1"
    # One BLAS thread, as in the sandboxes: OpenBLAS's extra threads spin on the core the
    # sandbox server is starting on (~0.1 s of CPU).
    from attn_practice.grader.sandbox.prestart import one_blas_thread_by_default

    one_blas_thread_by_default()
    pause_collector()  # until the command's imports are done (see `imports_done`)
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
