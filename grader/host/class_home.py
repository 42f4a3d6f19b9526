"""Where a class's data folder says its class lives: a SQLite file in it, or a database by URL.

`host DATA_DIR --db postgresql://...` keeps its class in PostgreSQL; the
folder then holds only a record of that URL (`database.json`, without any
password: the password stays in the instructor's shell, PGPASSWORD or
~/.pgpass). `host export`, `host backup` and `host set-password` on that
folder, and a later `host DATA_DIR` without `--db`, read the record and use
that database, so none of them opens a new, empty SQLite class on the spot
and exports nothing. A folder that holds no class at all is refused with a
message rather than turned into one (except by the commands that start a
class: `host` itself and `set-password`, which a class may be given first).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

RECORD = "database.json"
SQLITE_FILE = "class.sqlite3"  # store/sqlite.py's DB_FILE


class NoClass(Exception):
    """The folder holds no class and the command needs one: the message says what to give."""


@dataclass(frozen=True)
class Where:
    """The database to open (None: SQLite in the folder) and how the folder said so."""

    url: str | None
    recorded: bool = False


def without_password(url: str) -> str:
    """The URL with no password in its authority or its query (what the record may hold)."""
    url = re.sub(r"(://[^:/@\[]*):[^@/]*@", r"\1@", url)
    url = re.sub(r"([?&])password=[^&]*&?", r"\1", url)
    return url.rstrip("?&")


def recorded(data_dir: Path) -> str | None:
    """The database URL the folder records, or None (no record, or one that cannot be read)."""
    try:
        data = json.loads((data_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    url = data.get("db") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url else None


def record(data_dir: Path, url: str | None) -> None:
    """Note in the folder where its class lives (nothing for the default SQLite file)."""
    if not url:
        return
    from attn_practice.grader.atomic import write_atomic

    text = json.dumps({"db": without_password(url),
                       "note": "this class lives in that database; its password is never kept here"},
                      indent=2) + "\n"
    path = data_dir / RECORD
    try:
        if not path.exists() or recorded(data_dir) != without_password(url):
            write_atomic(path, text, mode=0o600)
    except OSError:
        pass  # a read-only folder: the commands then need --db again, as before


def where(data_dir: Path, db: str | None, *, must_exist: bool) -> Where:
    """The class's database: `--db` when given, else the folder's record, else its SQLite file.

    `must_exist`: refuse (NoClass) a folder with neither a record nor a SQLite
    file instead of creating an empty class in it.
    """
    if db:
        return Where(db)
    url = recorded(data_dir)
    if url:
        return Where(url, recorded=True)
    if must_exist and not (data_dir / SQLITE_FILE).exists():
        raise NoClass(f"{data_dir} holds no class (no {SQLITE_FILE}, no {RECORD} naming a database): "
                      "give the folder the class was hosted with, or --db URL for a class kept in "
                      "PostgreSQL.")
    return Where(None)


def unreachable_hint(place: Where) -> str:
    """What to add to 'cannot reach the database' when the URL came from the folder's record."""
    if not place.recorded or place.url is None:
        return ""
    return (f" (the folder records that its class lives at {place.url}, kept without any password: "
            "give --db with the full URL, or set PGPASSWORD or ~/.pgpass)")
