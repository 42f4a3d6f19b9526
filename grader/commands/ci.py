"""`attn-practice ci ...`: write the CI configuration that grades a course's submissions.

Thin Click wrappers over `staff.ci_setup`, following `common`'s convention
(`Problem` -> message -> exit code; results on `console()`). Nothing here
overwrites a file without `--force`, and `--force` keeps a backup.
"""

from __future__ import annotations

from pathlib import Path

import click

from attn_practice.grader.commands.common import EXIT_FAILED, Problem, say
from attn_practice.grader.staff import ci_setup

ci = click.Group(
    name="ci",
    help="Write CI configuration (GitHub Classroom, GitLab, Gradescope) that grades with attn-practice.",
)

_package = click.option(
    "--package",
    default="",
    help="What pip installs in CI instead of the bundled wheel of this grader: a requirement, "
         "a git URL, or a path.",
)
_force = click.option(
    "--force", is_flag=True, help="Replace existing files (the old ones are kept as .bak)."
)
_course = click.option(
    "--course",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A course file to grade with (its private suites are never put in a student's repository).",
)


def _check(package: str) -> str:
    if not package:
        return ""
    try:
        return ci_setup.check_package(package)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--package") from exc


def _install(path: Path, data: str | bytes, force: bool) -> None:
    try:
        written = ci_setup.install_file(path, data, force=force)
    except ci_setup.WouldOverwrite as exc:
        raise Problem(str(exc), code=EXIT_FAILED) from exc
    except OSError as exc:  # an output path that cannot be written is a usage error (exit 2)
        raise Problem(f"cannot write {path}: {exc.strerror or exc}") from exc
    if written.action == "unchanged":
        say(f"{path} is already up to date.")
    elif written.action == "replaced":
        say(f"Replaced {path} (the old file is in {written.backup}).")
    else:
        say(f"Wrote {path}.")


def _template(directory: Path, course: Path | None, package: str, private_repo: str,
              force: bool) -> object:
    """Write the files a student template needs beside its CI file; return the set-up."""
    from attn_practice.grader.course import CourseError
    from attn_practice.grader.staff.ci_setup import template_files

    try:
        setup, files = template_files(course, package=_check(package), private_repo=private_repo)
    except CourseError as exc:
        raise Problem(str(exc)) from None
    for rel, blob in files.items():
        _install(directory / rel, blob, force)
    if setup.private:
        say(f"Private suites: push {course} and the folders its extra_suites name to a private "
            "repository (the course file at its root), which CI fetches with a token: never into "
            "a student's repository. "
            "See 'Private suites' in the README.")
    return setup


_directory = click.argument(
    "directory",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)


@ci.command("github")
@_directory
@_package
@_course
@click.option("--private-repo", default="", metavar="OWNER/NAME",
              help="The private repository holding the course's private suites (default: the "
                   "organisation variable ATTN_PRACTICE_PRIVATE_REPO).")
@_force
def github(directory: Path, package: str, course: Path | None, private_repo: str,
           force: bool) -> None:
    """Write DIRECTORY/.github/workflows/classroom.yml for GitHub Classroom.

    The workflow installs this grader (a wheel written into DIRECTORY/.attn-practice/
    with pinned dependencies, or --package), runs `attn-practice grade . --format
    github`, and hands the result to GitHub Classroom's grading reporter.
    """
    from attn_practice.grader.staff.ci_setup import (
        GITHUB_WORKFLOW,
        PRIVATE_REPO_VAR,
        github_workflow,
    )

    if private_repo and ("/" not in private_repo or any(c.isspace() or c in "\"'$`{}"
                                                        for c in private_repo)):
        raise click.BadParameter("expected OWNER/NAME", param_hint="--private-repo")
    setup = _template(directory, course, package, private_repo or PRIVATE_REPO_VAR, force)
    try:
        workflow = github_workflow(setup)
    except ValueError as exc:  # a value GitHub would evaluate as an expression
        raise Problem(str(exc)) from None
    _install(directory / GITHUB_WORKFLOW, workflow, force)


@ci.command("gitlab")
@_directory
@_package
@_course
@_force
def gitlab(directory: Path, package: str, course: Path | None, force: bool) -> None:
    """Write DIRECTORY/.gitlab-ci.yml: grade with JUnit output GitLab shows in merge requests."""
    from attn_practice.grader.staff.ci_setup import GITLAB_CI, gitlab_ci

    setup = _template(directory, course, package, "", force)
    _install(directory / GITLAB_CI, gitlab_ci(setup), force)


@ci.command("gradescope")
@click.option(
    "--out",
    default="autograder.zip",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the autograder bundle to upload to Gradescope.",
)
@_package
@_course
@_force
def gradescope(out: Path, package: str, course: Path | None, force: bool) -> None:
    """Build a Gradescope autograder zip.

    It holds setup.sh, run_autograder, a wheel of this grader with pinned
    dependencies, the course file with every private suite it names, and a
    fresh grading secret.
    """
    from attn_practice.grader.course import CourseError
    from attn_practice.grader.staff.ci_setup import gradescope_zip

    try:
        data = gradescope_zip(_check(package), course)
    except CourseError as exc:
        raise Problem(str(exc)) from None
    _install(out, data, force)
