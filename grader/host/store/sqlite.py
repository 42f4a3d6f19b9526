"""The default store: one SQLite file in the class's data folder, as Datasette keeps one.

WAL mode, so reads never wait for the writer; reads use one connection per
thread; every write goes through ONE writer thread fed by a queue; the writes
waiting together commit in one `BEGIN IMMEDIATE ... COMMIT` (each in its own
savepoint) with `synchronous=FULL`, and each caller waits for that commit. So a method that returned has its row on disk: a
`kill -9` right after loses nothing the page was told was saved.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from attn_practice.grader.host.store.base import StoreUnavailable
from attn_practice.grader.host.store.schema import Dialect
from attn_practice.grader.host.store.sql import SqlStore, Tx

T = TypeVar("T")
DB_FILE = "class.sqlite3"
BUSY_TIMEOUT_MS = 10_000
#: writes committed together at most (group commit: one fsync for all that were waiting)
GROUP_MAX = 64


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


class _Cursorless:
    """The `Tx` a write's work sees: statements in the writer's open transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, tuple(params)).fetchall()


class SQLiteStore(SqlStore):
    dialect = Dialect.SQLITE

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        writer = _connect(self.path)
        writer.execute("PRAGMA journal_mode = WAL")
        self._writer_conn = writer
        self._queue: queue.Queue[tuple[Callable[[Tx], Any], Future[Any]] | None] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._write_loop, name="attnp-db-writer", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, data_dir: Path) -> SQLiteStore:
        return cls(Path(data_dir) / DB_FILE)

    def verify(self) -> None:
        """Raise sqlite3.DatabaseError when the file is damaged (SQLite's quick check, at start)."""
        problems = [r[0] for r in self._reader().execute("PRAGMA quick_check(5)").fetchall()]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(map(str, problems))[:300])

    # -------------------------------------------------------------- primitives
    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._closed:
            raise StoreUnavailable("the class database is closed")
        try:
            return self._reader().execute(sql, tuple(params)).fetchall()
        except sqlite3.DatabaseError as exc:  # away, locked, or damaged since the start
            raise StoreUnavailable(f"the class database cannot be read: {exc}") from exc

    def _write(self, work: Callable[[Tx], T]) -> T:
        if self._closed:
            raise StoreUnavailable("the class database is closed")
        done: Future[T] = Future()
        self._queue.put((work, done))
        return done.result()

    def _write_loop(self) -> None:
        """Group commit: the writes waiting together share one transaction and one fsync.

        Each write runs in its own SAVEPOINT, so one that fails is rolled back
        alone and its caller gets the error; the others commit. No caller is
        answered before the COMMIT that holds its write returned.
        """
        conn = self._writer_conn
        tx = _Cursorless(conn)
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < GROUP_MAX:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(more)
            batch = [(w, f) for w, f in batch if f.set_running_or_notify_cancel()]
            outcomes: list[tuple[bool, Any]] = []
            try:
                conn.execute("BEGIN IMMEDIATE")
                for work, _ in batch:
                    conn.execute("SAVEPOINT one_write")
                    try:
                        outcomes.append((True, work(tx)))
                        conn.execute("RELEASE one_write")
                    except BaseException as exc:  # noqa: BLE001 - handed to its caller
                        conn.execute("ROLLBACK TO one_write")
                        conn.execute("RELEASE one_write")
                        outcomes.append((False, exc))
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                for _, done in batch:
                    done.set_exception(StoreUnavailable(f"the class database cannot be written: {exc}"))
                continue
            for (_, done), (ok, value) in zip(batch, outcomes, strict=True):
                if ok:
                    done.set_result(value)
                else:
                    done.set_exception(value)

    # -------------------------------------------------------------- the end
    def backup(self, out: Path) -> None:
        """A consistent copy while the class runs (SQLite's online backup API)."""
        target = sqlite3.connect(str(out))
        try:
            self._reader().backup(target)
        finally:
            target.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._writer_conn.close()
        with self._conns_lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
