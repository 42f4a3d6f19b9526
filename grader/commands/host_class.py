"""Finding a class's store from its folder, for every `host` subcommand that works on one.

Its own module so that `host` and the subcommands that live beside it
(`host_keys`, `lti`) share it without importing each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attn_practice.grader.commands.common import Problem
from attn_practice.grader.host import class_home


def unavailable(dask_address: str | None) -> tuple[type[BaseException], ...]:
    """What opening the class's parts raises when one is unreachable or misnamed (not a bug)."""
    from attn_practice.grader.course import CourseError
    from attn_practice.grader.host.store.base import StoreUnavailable

    kinds: tuple[type[BaseException], ...] = (StoreUnavailable, CourseError, ValueError)
    if dask_address:
        from attn_practice.grader.host.checks.dask import DaskUnavailable

        kinds += (DaskUnavailable,)
    return kinds


def where_class(data_dir: Path, db: str | None) -> class_home.Where:
    """Where the class kept in `data_dir` lives; a folder with no class is refused, never made one."""
    try:
        return class_home.where(data_dir, db, must_exist=True)
    except class_home.NoClass as exc:
        raise Problem(str(exc)) from None


def open_class(data_dir: Path, db: str | None) -> Any:
    """The store of the class `data_dir` holds or records (or `db`), for the commands that work
    on a class's folder; a folder with no class, or a database away, is a Problem, said plainly."""
    from attn_practice.grader.host.server import open_data

    place = where_class(data_dir, db)
    try:
        return open_data(data_dir, place.url)
    except unavailable(None) as exc:
        raise Problem(str(exc) + class_home.unreachable_hint(place)) from None
