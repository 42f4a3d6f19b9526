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
              help="Grade on a Dask cluster (tls://host:8786, or 'local': TLS with throwaway credentials).")
@click.option("--dask-security", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="TLS settings for --dask ADDRESS (YAML: tls_ca_file, tls_client_cert, tls_client_key).")
@click.option("-v", "--verbose", is_flag=True, help="Show every failing test in full (rich).")
def grade(submissions: tuple[Path, ...], fmt: str | None, out: Path | None, course: Path | None,
          jobs: int | None, no_cache: bool, cache_dir: Path | None, dask_address: str | None,
          dask_security: Path | None, verbose: bool) -> int:
    """Grade one or more SUBMISSION folders (for course staff and CI).

    Learner code runs sandboxed; the same submission always gets the same grade.

    \b
    Examples:
      attn-practice grade student1/
      attn-practice grade subs/* --format csv --out grades.csv
      attn-practice grade . --format gradescope --out /autograder/results/results.json
    """
    from attn_practice.grader.course import CourseError, load_course
    from attn_practice.grader.staff.batch import GradeRequest, run_grading
    from attn_practice.grader.staff.locate import LocateError, locate

    try:
        located, skipped = locate([Path(s) for s in submissions])
    except LocateError as exc:
        raise Problem(str(exc)) from None
    if skipped:
        warn([f"skipped {len(skipped)} argument{'s' if len(skipped) > 1 else ''} that "
              f"{'is not a folder' if len(skipped) == 1 else 'are not folders'}: "
              + ", ".join(skipped)])
    if dask_security is not None and not dask_address:
        raise Problem("--dask-security goes with --dask ADDRESS")
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
        dask_security=dask_security,
        progress=fmt != "rich" and sys.stderr.isatty() and len(located) > 1 or
        (fmt == "rich" and len(located) > 1),
        graded_paths=[s.graded_path for s in located],
    )
    try:
        reports = run_grading(request)
    except RuntimeError as exc:
        raise Problem(str(exc)) from None
    if fmt == "html":  # one submission: the learner's page; several: the class page (§6)
        from attn_practice.grader.commands.report import grade_html

        grade_html(reports, out)
        exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)
    from attn_practice.grader.reports.output import emit

    emit(reports, fmt, out=out, console=console(), verbose=verbose)
    exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)
