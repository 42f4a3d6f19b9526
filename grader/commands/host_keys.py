"""`attn-practice host rotate-key DATA_DIR`: a new instructor key, every instructor signed out.

For a leaked instructor link: the old key stops working (within seconds on
a running class, every server process alike) and every instructor session
ends, so whoever opened the old link is out. Registered on the `host` group.
"""

from __future__ import annotations

from pathlib import Path

import click

from attn_practice.grader.commands.common import EXIT_PASSED, Problem, say


@click.command("rotate-key")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--db", default=None, metavar="URL", help="postgresql://... when the class uses one.")
def rotate_key_cmd(data_dir: Path, db: str | None) -> int:
    """Replace the instructor key and sign every instructor browser out (also while the class runs)."""
    from attn_practice.grader.commands.host_class import open_class
    from attn_practice.grader.host.auth import ensure_class_settings, rotate_instructor_key
    from attn_practice.grader.host.store.base import StoreUnavailable

    store = open_class(data_dir, db)  # the class the folder holds or records, never a new one
    try:
        ensure_class_settings(store)
        key = rotate_instructor_key(store)
    except StoreUnavailable as exc:
        raise Problem(str(exc)) from None
    finally:
        store.close()
    click.echo(f"New instructor key: {key}")
    say("The old instructor link no longer works and every instructor browser is signed out. "
        "Open the class's address with /teach?key=<the new key> (keep it private).")
    return EXIT_PASSED
