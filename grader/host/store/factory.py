"""Opening the class's store: SQLite in the data folder by default, PostgreSQL by URL.

A SQLite file that is damaged or cannot be read is said plainly at start
(`StoreDamaged`: which file, what is wrong, what to do: `host backup`'s copy
or a fresh DATA_DIR), never as an internal error.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from attn_practice.grader.host.store.base import Store, StoreUnavailable

__all__ = ["StoreDamaged", "open_store"]


class StoreDamaged(ValueError):
    """The class's SQLite file cannot be used as it is (corrupt, not a database, unreadable)."""


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str | None, data_dir: Path) -> Store:
    """The store `--db` names (None: SQLite in `data_dir`), migrated forward to this version."""
    store: Store
    if url and url.startswith(POSTGRES_SCHEMES):
        from attn_practice.grader.host.store.postgres import PostgresStore  # needs psycopg

        store = PostgresStore.open(url)
    elif url and url.startswith("sqlite:///"):
        return _sqlite(Path(url[len("sqlite:///"):]))
    elif url:
        raise ValueError(f"--db must be postgresql://... or sqlite:///PATH, not {url[:60]!r}")
    else:
        from attn_practice.grader.host.store.sqlite import DB_FILE

        return _sqlite(Path(data_dir) / DB_FILE)
    try:
        store.migrate()
    except BaseException:
        store.close()
        raise
    return store


def _sqlite(path: Path) -> Store:
    from attn_practice.grader.host.store.sqlite import SQLiteStore

    try:
        store = SQLiteStore(path)
    except (sqlite3.Error, OSError) as exc:
        raise StoreDamaged(damaged(path, exc)) from None
    try:
        store.verify()
        store.migrate()
    except (sqlite3.Error, OSError, StoreUnavailable) as exc:
        store.close()
        raise StoreDamaged(damaged(path, exc)) from None
    except BaseException:
        store.close()
        raise
    return store


def damaged(path: Path, exc: BaseException) -> str:
    """What is wrong with the class's SQLite file, and the ways back (a backup, a fresh folder)."""
    if path.is_dir():
        what = "it is a folder, not a database file"
    elif path.exists() and not os.access(path, os.R_OK | os.W_OK):
        what = "this user may not read and write it (check its owner and permissions)"
    elif path.exists() and path.stat().st_size and _not_sqlite(path):
        what = "it is not a SQLite database (its first bytes are not SQLite's)"
    else:
        detail = str(exc.__cause__ or exc).strip() or type(exc).__name__
        what = f"SQLite says: {detail[:200]}"
    return (f"the class database {path} cannot be used: {what}. If it was damaged, "
            "stop every server of this class and put back the copy `attn-practice host "
            f"backup` made (copied over {path.name}), or start the class in a fresh DATA_DIR.")


def _not_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) != b"SQLite format 3\x00"
    except OSError:
        return False
