"""Opening the class's store: SQLite in the data folder by default, PostgreSQL by URL."""

from __future__ import annotations

from pathlib import Path

from attn_practice.grader.host.store.base import Store

__all__ = ["open_store"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str | None, data_dir: Path) -> Store:
    """The store `--db` names (None: SQLite in `data_dir`), migrated forward to this version."""
    store: Store
    if url and url.startswith(POSTGRES_SCHEMES):
        from attn_practice.grader.host.store.postgres import PostgresStore  # needs psycopg

        store = PostgresStore.open(url)
    elif url and url.startswith("sqlite:///"):
        from attn_practice.grader.host.store.sqlite import SQLiteStore

        store = SQLiteStore(Path(url[len("sqlite:///"):]))
    elif url:
        raise ValueError(f"--db must be postgresql://... or sqlite:///PATH, not {url[:60]!r}")
    else:
        from attn_practice.grader.host.store.sqlite import SQLiteStore

        store = SQLiteStore.open(data_dir)
    try:
        store.migrate()
    except BaseException:
        store.close()
        raise
    return store
