"""`attn-practice report`: the class page from saved grade JSON (CONTRACT §6).

Also the one place `grade --format html` comes to: one submission gets the
learner's own page, several the class page. Aggregation lives in
`grader.staff.class_report`, the HTML in `grader.reports.html*`; this module
only reads arguments, calls them and writes the file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from attn_practice.grader.commands.common import EXIT_PASSED, Problem, exit_with, say, warn

if TYPE_CHECKING:
    from attn_practice.grader.results import GradeReport

REPORT_FORMATS = ["html", "json", "csv"]


@click.command("report")
@click.argument("results", nargs=-1, required=True,
                type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write to FILE ('-': stdout). Default: json and csv to stdout; html to "
              "NAME.html in this folder, NAME the first RESULTS file's.")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="html",
              show_default=True, help="html: the class page; json: the aggregates; "
              "csv: the misconception table.")
@click.option("--title", default="", help="Page title (default: 'Class report: N submissions').")
@click.option("--sort", "order", type=click.Choice(["given", "score"]), default="given", show_default=True,
              help="Order of the per-submission table: as given, or lowest score first.")
def report(results: tuple[Path, ...], out: Path | None, fmt: str, title: str, order: str) -> None:
    """What the class got wrong, from the JSON that `grade --format json` wrote.

    Reads one or more RESULTS files (each one report object or an array of
    them) and never re-grades. All reports must come from one course. An
    export of a hosted class (`host export`) also gives every mistake met
    during the session, fixed or not (`diagnoses_met`).

    \b
    Examples:
      attn-practice grade subs/* --format json --out results.json
      attn-practice report results.json --out class.html
      attn-practice report section-*.json --format csv --out mistakes.csv
    """
    from attn_practice.grader.staff.class_report import ClassReportError, load_members

    try:
        members, warnings = load_members(list(results))
    except ClassReportError as exc:
        raise Problem(str(exc)) from None
    warn(warnings)
    from attn_practice.grader.staff.session_history import read_histories

    text = render_members(members, fmt, title=title, order=order, history=read_histories(results))
    if fmt == "html" and out is None:
        out = page_beside(results)
        write(text, out, fmt)
        say(f"Wrote the class report to {out}: open it in a browser (--out FILE chooses where).")
    else:
        write(text, None if out == Path("-") else out, fmt)
    exit_with(EXIT_PASSED)


def page_beside(results: Sequence[Path]) -> Path:
    """Where `report` puts the page when no --out is given: NAME.html in the current folder."""
    first = Path(results[0])
    out = Path.cwd() / f"{first.stem}.html"
    taken = {Path(r).resolve() for r in results}
    return out.with_name(f"{first.stem}-report.html") if out.resolve() in taken else out


def render_members(members: Sequence[Any], fmt: str, *, title: str = "", order: str = "given",
                   history: Any = None) -> str:
    """The text of one class report format from loaded members (`history`: a hosted session's)."""
    from attn_practice import __version__
    from attn_practice.grader.staff.class_report import aggregate, misconception_csv

    agg = aggregate(members, sort=order, history=history)
    if fmt == "json":
        return json.dumps(agg, indent=2, ensure_ascii=False)
    if fmt == "csv":
        return misconception_csv(agg)
    from attn_practice.grader.reports.html import render_class

    return render_class(agg, [m.report for m in members], title=title,
                        generator=f"attn-practice {__version__}")


def write(text: str, out: Path | None, fmt: str) -> None:
    """To `out` atomically, else to stdout (a page is refused on a terminal: it is unreadable)."""
    text = text if text.endswith("\n") else text + "\n"
    if out is None:
        if fmt == "html" and sys.stdout.isatty():
            raise Problem("an HTML page is not for a terminal: give --out FILE.html "
                          "(or pipe the output to a file).")
        sys.stdout.write(text)
        return
    from attn_practice.grader.atomic import write_output

    try:
        write_output(out, text)
    except OSError as exc:
        raise Problem(f"could not write {out}: {exc.strerror or exc}.") from None


def grade_html(reports: Sequence[GradeReport], out: Path | None) -> None:
    """`grade --format html`: the learner's page for one submission, the class page for more."""
    from attn_practice import __version__

    if len(reports) == 1:
        from attn_practice.grader.reports.html_learner import render_learner

        write(render_learner(reports[0], generator=f"attn-practice {__version__}"), out, "html")
        return
    from attn_practice.grader.staff.class_report import ClassReportError, from_reports

    try:
        members = from_reports(reports)
    except ClassReportError as exc:
        raise Problem(str(exc)) from None
    write(render_members(members, "html"), out, "html")
