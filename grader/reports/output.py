"""Send a list of reports to stdout or a file in the chosen format."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attn_practice.grader.results import GradeReport

if TYPE_CHECKING:
    from rich.console import Console


def emit(reports: Sequence[GradeReport], fmt: str, *, out: Path | None, console: Console | None = None,
         verbose: bool = False) -> None:
    """Write `reports` in `fmt` to `out` or stdout; `console` (rich to stdout only) is made if not given.

    The text formats never import rich: a CI job's `grade --format json` need not pay for it.
    """
    if fmt == "rich":
        if out is not None:
            from rich.console import Console as _Console

            with open(out, "w", encoding="utf-8") as f:
                from attn_practice.grader.reports.terminal import render_reports

                render_reports(_Console(file=f, width=100, no_color=True), reports, verbose=verbose)
            return
        from attn_practice.grader.reports.terminal import render_reports

        if console is None:  # stdout as the CLI's own console() makes it
            from rich.console import Console as _Console

            console = _Console(highlight=False, emoji=False)
        render_reports(console, reports, verbose=verbose)
        return
    text = render(reports, fmt)
    if out is not None:
        from attn_practice.grader.atomic import write_output

        write_output(Path(out), text if text.endswith("\n") else text + "\n")
    else:
        import sys

        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def render(reports: Sequence[GradeReport], fmt: str) -> str:
    """The report text in `fmt` (one of `FORMATS`); ValueError for any other name."""
    from attn_practice.grader.reports import FORMATS

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))}, rich)")
    return FORMATS[fmt](list(reports))
