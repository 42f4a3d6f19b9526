"""`attn-practice grade`: grade submissions for course staff and CI."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from attn_practice.grader.commands.common import (
    EXIT_FAILED,
    EXIT_PASSED,
    Problem,
    console,
    exit_with,
    warn,
)


def notice(messages: list[str]) -> None:
    """Warnings on stderr, one line each (no wrapping: CI logs are grepped)."""
    from rich.text import Text

    from attn_practice.grader.commands.common import error_console

    for m in messages:
        error_console().print(Text.assemble(("warning: ", "bold yellow"), m), soft_wrap=True)


# ------------------------------------------------------------------ grade
FORMAT_CHOICES = ["rich", "json", "junit", "gradescope", "github", "csv", "html"]
#: Formats whose consumer reads one submission's result (one results.json, one runner).
SINGLE_SUBMISSION = {
    "gradescope": "Gradescope reads one results.json per student",
    "github": "GitHub Classroom reads one result per repository",
}


@click.command()
@click.argument("submissions", nargs=-1, required=True,
                type=click.Path(path_type=Path, exists=True))
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
    """Grade one or more SUBMISSIONs: folders, .zip or .ipynb files (for course staff and CI).

    Learner code runs sandboxed; the same submission always gets the same grade.

    \b
    Examples:
      attn-practice grade student1/
      attn-practice grade subs/* --format csv --out grades.csv
      attn-practice grade . --format gradescope --out /autograder/results/results.json
    """
    from attn_practice.grader.course import CourseError, load_course
    from attn_practice.grader.staff.batch import GradeRequest, run_grading
    from attn_practice.grader.staff.intake import (
        Intake,
        no_submission,
        prepare_all,
        skipped_warning,
    )

    # Zips unpacked, notebooks made into step files, in a temp folder removed when the command ends.
    intake = click.get_current_context().with_resource(Intake())
    located, skipped = prepare_all(intake, [Path(s) for s in submissions])
    if skipped:
        warn([skipped_warning(skipped)])
    if not located:
        raise Problem(no_submission(skipped))
    fmt = fmt or ("rich" if sys.stdout.isatty() and out is None else "json")
    if fmt in SINGLE_SUBMISSION and len(located) > 1:
        raise Problem(f"--format {fmt} takes exactly one submission ({SINGLE_SUBMISSION[fmt]}), "
                      f"but {len(located)} were given; grade them one at a time, or use "
                      "--format json, csv or junit for a class")
    if fmt == "html" and out is None and sys.stdout.isatty():  # refuse before grading, not after
        raise Problem("an HTML page is not for a terminal: give --out FILE.html.")
    try:
        course_obj = load_course(course) if course else None
    except CourseError as exc:
        raise Problem(str(exc)) from None
    request = GradeRequest(
        submissions=[s.path for s in located],
        labels=[s.label for s in located],
        course=course_obj,
        jobs=jobs,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        dask_address=dask_address,
        progress=fmt != "rich" and sys.stderr.isatty() and len(located) > 1 or
        (fmt == "rich" and len(located) > 1),
        graded_paths=[s.graded_path for s in located],
    )
    try:
        reports = [p.finish(r) for p, r in zip(located, run_grading(request), strict=True)]
    except RuntimeError as exc:
        raise Problem(str(exc)) from None
    if fmt != "rich":  # the rich report shows them itself
        from attn_practice.grader.staff.intake import warning_lines

        notice(warning_lines(reports))
    if fmt == "html":  # one submission: the learner's page; several: the class page (§6)
        from attn_practice.grader.commands.report import grade_html

        grade_html(reports, out)
        exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)
    from attn_practice.grader.reports.output import emit

    emit(reports, fmt, out=out, console=console(), verbose=verbose)
    exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)
