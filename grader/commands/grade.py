"""`attn-practice grade`: grade submissions for course staff and CI."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from attn_practice.grader.commands.common import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_PASSED,
    Problem,
    console,
    exit_with,
    imports_done,
)


def notice(messages: list[str]) -> None:
    """Warnings on stderr, one line each (no wrapping: CI logs are grepped)."""
    if not messages:  # rich is imported only to print something
        return
    from rich.text import Text

    from attn_practice.grader.commands.common import error_console

    for m in messages:
        error_console().print(Text.assemble(("warning: ", "bold yellow"), m), soft_wrap=True)


if TYPE_CHECKING:
    from attn_practice.grader.course import Course
    from attn_practice.grader.results import GradeReport


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
@click.option("--regrade-timeouts", is_flag=True,
              help="Grade again the submissions whose cached result holds a timeout.")
@click.option("--dask", "dask_address", metavar="ADDRESS",
              help="Grade on a Dask cluster (tls://host:8786, or 'local': TLS with throwaway credentials).")
@click.option("--dask-security", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="TLS settings for --dask ADDRESS (YAML: tls_ca_file, tls_client_cert, tls_client_key).")
@click.option("-v", "--verbose", is_flag=True, help="Show every failing test in full (rich).")
def grade(submissions: tuple[Path, ...], fmt: str | None, out: Path | None, course: Path | None,
          jobs: int | None, no_cache: bool, cache_dir: Path | None, regrade_timeouts: bool,
          dask_address: str | None, dask_security: Path | None, verbose: bool) -> int:
    """Grade one or more SUBMISSIONs: folders, .zip or .ipynb files (for course staff and CI).

    Learner code runs sandboxed; the same submission always gets the same grade.
    Every argument gets a row; a folder holding a class (an LMS bulk download,
    unpacked) is graded one row per student. Patterns: docs/handins.md.

    \b
    Examples:
      attn-practice grade student1/
      attn-practice grade subs/* --format csv --out grades.csv
      attn-practice grade canvas_download/ --format csv --out grades.csv
      attn-practice grade . --format gradescope --out /autograder/results/results.json
    """
    from attn_practice.grader.course import CourseError, load_course
    from attn_practice.grader.staff.intake import Intake, prepare_all

    if len(submissions) > 1 and jobs != 1 and not dask_address:
        early_workers(min(jobs or os.cpu_count() or 1, len(submissions)), no_cache, cache_dir)
    fmt = fmt or ("rich" if sys.stdout.isatty() and out is None else "json")
    # Zips unpacked, notebooks made into step files, in a temp folder removed when the command ends.
    # Every argument is a submission (a file that holds no work gets a `missing` row); a folder
    # of a class is its students, except for formats that read one submission's result.
    intake = click.get_current_context().with_resource(Intake())
    located, classes = prepare_all(intake, [Path(s) for s in submissions],
                                   classes=fmt not in SINGLE_SUBMISSION)
    notice(classes)
    if (len(located) == 1 or jobs == 1) and not dask_address:
        # Graded in this process: the sandbox server starts while the engine is imported.
        from attn_practice.grader.sandbox.prestart import prestart

        prestart()
    # Only now the engine (NumPy, pytest, Hypothesis): its import overlaps the zygote's start.
    from attn_practice.grader.staff.batch import GradeRequest, run_grading

    imports_done()
    if dask_security is not None and not dask_address:
        raise Problem("--dask-security goes with --dask ADDRESS")
    if fmt in SINGLE_SUBMISSION and len(located) > 1:
        raise Problem(f"--format {fmt} takes exactly one submission ({SINGLE_SUBMISSION[fmt]}), "
                      f"but {len(located)} were given; grade them one at a time, or use "
                      "--format json, csv or junit for a class")
    if fmt == "html" and out is None and sys.stdout.isatty():  # refuse before grading, not after
        raise Problem("an HTML page is not for a terminal: give --out FILE.html.")
    from attn_practice.grader.atomic import output_problem

    if out is not None and (why := output_problem(out)):  # refused before grading a class into it
        raise Problem(f"--out {why}")
    # Importing the private suites must not leave __pycache__ beside them (often the cwd);
    # spawned workers inherit the setting through the environment.
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        course_obj = load_course(course) if course else None
    except CourseError as exc:
        raise Problem(str(exc)) from None
    from attn_practice.grader.staff.cache import prepare
    from attn_practice.grader.staff.private_dir import PrivateDirError

    try:  # 0700 and ours, or refused; never a `.hypothesis/` in the cwd or a submission
        prepare(cache_dir, use_cache=not no_cache)
    except PrivateDirError as exc:
        raise Problem(str(exc)) from None
    if course_obj is not None:
        try:
            reference_check(course, course_obj, cache_dir, use_cache=not no_cache)
        except Problem as exc:
            if fmt == "gradescope" and out is not None:
                gradescope_stopped(out, exc)
            raise
    request = GradeRequest(
        submissions=[s.path for s in located],
        labels=[s.label for s in located],
        course=course_obj,
        jobs=jobs,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        dask_address=dask_address,
        dask_security=dask_security,
        progress=len(located) > 1,  # a bar on a terminal, a line every 10 s in a CI log
        graded_paths=[s.graded_path for s in located],
        regrade_timeouts=regrade_timeouts,
    )
    try:
        reports = [p.finish(r) for p, r in zip(located, run_grading(request), strict=True)]
    except (RuntimeError, PrivateDirError) as exc:
        raise Problem(str(exc)) from None
    if fmt != "rich":  # the rich report shows them itself
        from attn_practice.grader.staff.intake import warning_lines

        notice(warning_lines(reports))
    if fmt == "html":  # one submission: the learner's page; several: the class page (§6)
        from attn_practice.grader.commands.report import grade_html

        grade_html(reports, out)
        grader_failures(reports)
        exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)
    from attn_practice.grader.reports.output import emit

    try:
        emit(reports, fmt, out=out, console=console() if fmt == "rich" else None, verbose=verbose)
    except OSError as exc:
        raise Problem(f"could not write {out}: {exc.strerror or exc}") from None
    grader_failures(reports)
    exit_with(EXIT_PASSED if all(r.passed for r in reports) else EXIT_FAILED)


def early_workers(jobs: int, no_cache: bool, cache_dir: Path | None) -> None:
    """Start the pool's workers now, their start-up beside the intake, unless the class is
    likely served from the results cache (then they would only be started to be ended)."""
    from attn_practice.grader.staff import pool
    from attn_practice.grader.staff.cache import holds_entries

    if no_cache or not holds_entries(cache_dir):
        pool.start_early(jobs)
        click.get_current_context().call_on_close(pool.discard)  # unless the batch took them


def reference_check(path: Path, course: Course, cache_dir: Path | None, *, use_cache: bool) -> None:
    """Refuse (exit 2) a course whose private tests fail, crash or skip on the reference."""
    from attn_practice.grader.staff.private_reference import (
        ReferenceCheckFailed,
        check_on_reference,
    )

    try:
        problems = check_on_reference(course, cache_dir=cache_dir, use_cache=use_cache)
    except ReferenceCheckFailed as exc:
        raise Problem(str(exc), code=EXIT_INTERNAL) from None
    if problems:
        listed = "\n".join(f"  {p}" for p in problems)
        raise Problem(f"{path}: key 'extra_suites': {len(problems)} private test"
                      f"{'s' if len(problems) > 1 else ''} would cost every student the step, so "
                      f"nothing was graded; fix {'them' if len(problems) > 1 else 'it'} and grade "
                      f"again (`attn-practice selftest --course {path}` shows more):\n{listed}")


def gradescope_stopped(out: Path, problem: Problem) -> None:
    """On Gradescope, a grade stopped before grading still writes a results.json that says what
    happened (the harness would otherwise show only a generic failure)."""
    from attn_practice.grader.reports._text import json_text
    from attn_practice.grader.reports.gradescope import write_atomic

    what = ("The autograder could not grade this submission: the course's own tests failed on the "
            "reference solution, so no step was graded. This is not a verdict on your code; your "
            "instructor has been told why in the autograder output and must fix the course."
            if problem.exit_code == EXIT_INTERNAL else
            "The autograder could not grade this submission: its course setup was refused. This is "
            "not a verdict on your code; please tell your instructor.")
    try:
        write_atomic(out, json_text({"score": 0.0, "output": what, "output_format": "text", "tests": []}) + "\n")
    except OSError:
        pass


def grader_failures(reports: Sequence[GradeReport]) -> None:
    """Exit 3 with a note for staff when the grader itself failed on a test (CONTRACT 4.4).

    The reports (already written) say so to the student, never as a verdict;
    this says what failed, for the people who can fix it.
    """
    failed = [(r, s, t) for r in reports for s in r.steps for t in s.tests
              if t.failure is not None and t.failure.kind.grader_fault]
    if not failed:
        return
    lines = [f"  {r.submission}: {s.id} {t.name!r}: {' '.join(t.message.split())[:300]}"
             for r, s, t in failed[:20]]
    more = f"\n  ... and {len(failed) - 20} more" if len(failed) > 20 else ""
    subs = len({r.submission for r, _, _ in failed})
    raise Problem(f"the grader itself failed on {len(failed)} test{'s' if len(failed) > 1 else ''} "
                  f"in {subs} submission{'s' if subs > 1 else ''} (retried once; not the students' "
                  "doing, and their reports say so, with no verdict). Usual causes: this machine "
                  "could not start a sandbox, or a private test crashed on a learner's answer "
                  "(make it judge with step.check, step.compare or step.require).\n"
                  + "\n".join(lines) + more, code=EXIT_INTERNAL)
