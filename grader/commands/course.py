"""`attn-practice course init DIR`: start a course file and private suites for instructors.

Follows `common`'s convention (`Problem` -> message -> exit code). Existing
files are never replaced without `--force`, and then a backup is kept.
"""

from __future__ import annotations

from pathlib import Path

import click

from attn_practice.grader.commands.common import EXIT_INTERNAL, Problem, say

course = click.Group(name="course", help="Set up a course: course file and private test suites.")


@course.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace existing files (the old ones are kept as .bak).")
def init(directory: Path, force: bool) -> None:
    """Write DIRECTORY/course.yaml (commented) and DIRECTORY/private/, one example test per core step.

    \b
    Then:
      attn-practice selftest --course DIRECTORY/course.yaml
      attn-practice grade SUBMISSION --course DIRECTORY/course.yaml
    """
    from attn_practice.grader.staff.ci_setup import WouldOverwrite, install_file
    from attn_practice.grader.staff.course_template import COURSE_FILE, files

    todo = files()
    if not force:
        clash = [rel for rel, text in todo.items() if (directory / rel).exists()
                 and (directory / rel).read_bytes() != text.encode()]
        if clash:
            raise Problem(f"{', '.join(str(directory / c) for c in clash)} already exist"
                          f"{'s' if len(clash) == 1 else ''}; use --force to replace "
                          f"{'it' if len(clash) == 1 else 'them'} (a backup is kept)")
    for rel, text in todo.items():
        path = directory / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            written = install_file(path, text, force=force)
        except WouldOverwrite as exc:
            raise Problem(str(exc)) from None
        except OSError as exc:
            raise Problem(f"cannot write {path}: {exc.strerror or exc}", code=EXIT_INTERNAL) from None
        backup = f" (the old file is in {written.backup})" if written.backup else ""
        say(f"{written.action} {path}{backup}")
    say(f"Next: edit {directory / COURSE_FILE}, then check it with "
        f"`attn-practice selftest --course {directory / COURSE_FILE}`.")
