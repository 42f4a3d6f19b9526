"""`attn-practice ci ...`: write the CI configuration that grades a course's submissions.

Thin Click wrappers over `ci_setup`; the CLI registers the group with
`cli.add_command(ci)`. Nothing here overwrites a file without `--force`, and
`--force` keeps a backup.
"""

from __future__ import annotations

from pathlib import Path

import click

from attn_practice.grader.staff import ci_setup

ci = click.Group(
    name="ci",
    help="Write CI configuration (GitHub Classroom, GitLab, Gradescope) that grades with attn-practice.",
)

_package = click.option(
    "--package",
    default=ci_setup.DEFAULT_PACKAGE,
    show_default=True,
    help="What pip installs in CI: a requirement, a git URL, or a path.",
)
_force = click.option(
    "--force", is_flag=True, help="Replace an existing file (the old one is kept as .bak)."
)


def _check(package: str) -> str:
    try:
        return ci_setup.check_package(package)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--package") from exc


def _install(path: Path, data: str | bytes, force: bool) -> None:
    try:
        written = ci_setup.install_file(path, data, force=force)
    except ci_setup.WouldOverwrite as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from exc
    if written.action == "unchanged":
        click.echo(f"{path} is already up to date.")
    elif written.action == "replaced":
        click.echo(f"Replaced {path} (the old file is in {written.backup}).")
    else:
        click.echo(f"Wrote {path}.")


_directory = click.argument(
    "directory",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)


@ci.command("github")
@_directory
@_package
@_force
def github(directory: Path, package: str, force: bool) -> None:
    """Write DIRECTORY/.github/workflows/classroom.yml for GitHub Classroom.

    The workflow installs attn-practice, runs `attn-practice grade . --format
    github`, and hands the result to GitHub Classroom's grading reporter.
    """
    _install(directory / ci_setup.GITHUB_WORKFLOW, ci_setup.github_workflow(_check(package)), force)


@ci.command("gitlab")
@_directory
@_package
@_force
def gitlab(directory: Path, package: str, force: bool) -> None:
    """Write DIRECTORY/.gitlab-ci.yml: grade with JUnit output GitLab shows in merge requests."""
    _install(directory / ci_setup.GITLAB_CI, ci_setup.gitlab_ci(_check(package)), force)


@ci.command("gradescope")
@click.option(
    "--out",
    default="autograder.zip",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the autograder bundle to upload to Gradescope.",
)
@_package
@click.option(
    "--course",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A course file to bundle; run_autograder then grades with --course.",
)
@_force
def gradescope(out: Path, package: str, course: Path | None, force: bool) -> None:
    """Build a Gradescope autograder zip (setup.sh + run_autograder)."""
    _install(out, ci_setup.gradescope_zip(_check(package), course), force)
