"""The class's state in PostgreSQL: the same Store as SQLite, for several server processes.

`SqlStore` holds every method's logic and statement; this module only says
how a statement reaches PostgreSQL (psycopg 3 and its connection pool), in
the two primitives `_read` and `_write`. Statements are converted once from
schema.py's portable form (`?` placeholders, `REAL` columns) and cached.

Why each choice:

- **Writes are serialised across processes** by a transaction-level advisory
  lock taken first in every write transaction. SQLite gets the same from its
  single writer; here it keeps the things `SqlStore` computes inside a
  transaction (the next version number, `MAX(seq) + 1`) unique when two
  processes save for one learner at once, makes event ids commit in id order
  (so a reader polling `events_since(cursor)` never skips an event committed
  late with a smaller id), and lets two processes start and migrate at once.
  A write holds the lock for its few statements only; a class's write rate
  (a save every ~15 s per learner) is far below what one lock passes.
- **The database going away is not an error page.** Any loss of the
  connection, a refused connection, or a pool that cannot hand one out
  within `timeout` seconds raises `StoreUnavailable` (the app answers 503
  with Retry-After). A pool that timed out because every connection is busy
  is told from a database that is away by one direct connection attempt
  (at most one a second): busy answers that request 503 and nothing more. A write is acknowledged only after COMMIT returned; a
  write that failed before COMMIT was sent is retried once on a fresh
  connection (so the first request after a restart does not fail on a stale
  pooled connection); one whose COMMIT got no answer is reported unavailable,
  never as saved (the page retries it, so at worst a version is stored twice,
  never lost). Reads are retried once the same way. Once the database is
  known to be away, requests wait only DOWN_TIMEOUT for a connection, so a
  class of open pages gets its 503s at once instead of piling up.
- **Recovery by itself.** Pooled connections are checked before use; broken
  ones are dropped. The pool gives up on reconnecting after a few seconds
  and tries again on the next request, so the first request after the
  database returns gets a fresh connection (no long back-off to wait out).
- **Live updates across processes** need no extra channel: events are rows,
  and every process polls `events_since` (the app's poll interval is the
  bound; see README "Deploying past one machine").
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from attn_practice.grader.host import ops_log
from attn_practice.grader.host.store import schema as q
from attn_practice.grader.host.store.base import StoreUnavailable
from attn_practice.grader.host.store.sql import SqlStore

T = TypeVar("T")

NO_PSYCOPG = "PostgreSQL support is not installed: pip install '.[host]' in the attn-practice checkout"
#: Seconds a request waits for a pooled connection before it is told the database is away.
DEFAULT_TIMEOUT = 2.0
#: The same wait while the database is already known to be away (answer 503 quickly).
DOWN_TIMEOUT = 0.25
#: Seconds one connection attempt may take (an unreachable host must not hang a request).
CONNECT_TIMEOUT = 3
#: Seconds the pool keeps retrying one lost connection before it waits for the next request.
RECONNECT_TIMEOUT = 4.0
DEFAULT_POOL_SIZE = 8
#: The advisory lock every write transaction holds (any fixed 64-bit key; "attn" in ASCII).
WRITE_LOCK_KEY = 0x6174746E
RETRY_AFTER = 2.0
#: Seconds between direct probes that tell a busy pool from a database that is away.
PROBE_INTERVAL = 1.0
URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str) -> bool:
    """Whether `--db URL` names a PostgreSQL database."""
    return url.startswith(URL_SCHEMES)


@functools.lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """schema.py's statement for psycopg: `?` -> `%s`, a literal `%` -> `%%`, outside quotes.

    Quoted text ('...' strings, "..." identifiers) is copied as it is, so a `?`
    inside a string literal stays a character.
    """
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


_DDL = re.compile(r"^\s*(CREATE|ALTER)\s+TABLE\b", re.IGNORECASE)
_REAL = re.compile(r"\bREAL\b", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def for_postgres(sql: str) -> str:
    """One statement as PostgreSQL runs it.

    In a table definition, `REAL` becomes `DOUBLE PRECISION`: SQLite's REAL
    is 8 bytes, PostgreSQL's 4, and 4 bytes hold an epoch time only to the
    nearest two minutes.
    """
    if _DDL.match(sql):
        sql = _REAL.sub("DOUBLE PRECISION", sql)
    return to_pyformat(sql)


def safe_url(url: str) -> str:
    """The URL without its password (for logs and messages)."""
    url = re.sub(r"(://[^:/@\[]*):[^@/]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


def _first_line(exc: BaseException, url: str) -> str:
    """libpq's reason in one line, with the URL (and so any password) replaced by a safe one."""
    text = str(exc).replace(url, safe_url(url)).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line.removeprefix("connection is bad: ").removeprefix("connection failed: ")


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    """Booleans as 0/1, as SQLite stores them (the schema's flags are INTEGER columns)."""
    return tuple(int(p) if isinstance(p, bool) else p for p in params)


def _import_psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise RuntimeError(NO_PSYCOPG) from exc
    return psycopg, psycopg_pool


class _CommitUnknown(Exception):
    """COMMIT was sent and no answer came: the write may or may not be stored."""


class _Tx:
    """What `SqlStore`'s write functions see: `execute(sql, params) -> rows`."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cursor.execute(for_postgres(sql), _params(params))
        return self._cursor.fetchall() if self._cursor.description is not None else []


class PostgresStore(SqlStore):
    """`SqlStore` on a psycopg connection pool; see the module docstring for the guarantees."""

    dialect = q.Dialect.POSTGRES

    def __init__(self, url: str, *, pool_size: int = DEFAULT_POOL_SIZE,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        psycopg, psycopg_pool = _import_psycopg()
        self._psycopg = psycopg
        self._no_connection = (psycopg_pool.PoolTimeout, psycopg_pool.TooManyRequests)
        self._lost = (psycopg.OperationalError, psycopg.InterfaceError, *self._no_connection)
        self.url = url
        self.timeout = timeout
        self._closed = threading.Event()
        self._down = threading.Event()  # set from a lost connection until one works again
        self._probe_lock = threading.Lock()
        self._probe_at = -PROBE_INTERVAL
        self._probe_ok = True
        # The pool warns on every failed reconnection attempt; we log the state changes instead.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
        self._pool = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=max(1, pool_size), open=False, timeout=timeout,
            check=psycopg_pool.ConnectionPool.check_connection,
            reconnect_timeout=RECONNECT_TIMEOUT,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT,
                    "application_name": "attn-practice-host"},
            name="attn-practice")
        self._pool.open(wait=False)

    @classmethod
    def open(cls, url: str, **kwargs: Any) -> PostgresStore:
        """A store on `url`, its schema migrated forward (the database must be reachable).

        One direct connection first, so that a server that starts on a wrong
        URL says why: ValueError for a URL libpq cannot read, StoreUnavailable
        with libpq's reason (refused, no such socket, wrong password) for one
        it cannot reach. Neither message repeats the password.
        """
        psycopg, _ = _import_psycopg()
        try:
            psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT).close()
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"--db: not a PostgreSQL URL libpq can read: {_first_line(exc, url)}") from None
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"cannot reach the class database at {safe_url(url)}: "
                                   f"{_first_line(exc, url)}", RETRY_AFTER) from None
        store = cls(url, **kwargs)
        try:
            store.migrate()
        except BaseException:
            store.close()
            raise
        return store

    # -------------------------------------------------------------- primitives
    @property
    def available(self) -> bool:
        """False from a lost connection until a statement succeeds again."""
        return not self._down.is_set()

    def _mark(self, ok: bool, exc: BaseException | None = None) -> None:
        if ok and self._down.is_set():
            self._down.clear()
            ops_log.log_database(True, self._safe_url())
        elif not ok and not self._down.is_set():
            self._down.set()
            ops_log.log_database(False, self._safe_url(), type(exc).__name__)

    def _safe_url(self) -> str:
        return safe_url(self.url)

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        if isinstance(exc, self._no_connection) and not self._down.is_set() and self._reachable():
            # Every pooled connection is busy, the database is fine: 503 for this request
            # only, without switching the whole process to "away" (fast 503s for everyone).
            return StoreUnavailable("the class database is busy; try again in a moment", RETRY_AFTER)
        self._mark(False, exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailable(f"the class database is not reachable ({detail})", RETRY_AFTER)

    def _reachable(self) -> bool:
        """Whether a fresh connection opens now (asked at most once a second, on pool timeouts)."""
        now = time.monotonic()
        with self._probe_lock:
            if now - self._probe_at < PROBE_INTERVAL:
                return self._probe_ok
            self._probe_at = now
            try:
                self._psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT).close()
                self._probe_ok = True
            except Exception:  # noqa: BLE001 - any failure to connect means away
                self._probe_ok = False
            return self._probe_ok

    def _connection(self) -> Any:
        return self._pool.connection(timeout=DOWN_TIMEOUT if self._down.is_set() else self.timeout)

    def _retry(self, exc: BaseException, attempt: int) -> bool:
        """Whether a failed statement is worth one more go on a fresh connection.

        Not when no connection could be had at all (the pool already waited),
        nor on the second attempt, nor once the store is closing.
        """
        return attempt == 1 and not isinstance(exc, self._no_connection) and not self._closed.is_set()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        statement, values = for_postgres(sql), _params(params)
        for attempt in (1, 2):
            try:
                with self._connection() as conn:
                    cur = conn.execute(statement, values)
                    rows = cur.fetchall() if cur.description is not None else []
            except self._lost as exc:
                if not self._retry(exc, attempt):
                    raise self._unavailable(exc) from exc
                continue
            self._mark(True)
            return rows
        raise AssertionError("unreachable")

    def _write(self, work: Callable[[_Tx], T]) -> T:
        for attempt in (1, 2):
            try:
                result = self._write_once(work)
            except _CommitUnknown as exc:
                raise self._unavailable(exc.__cause__ or exc) from exc
            except self._lost as exc:  # failed before COMMIT was sent: nothing stored
                if not self._retry(exc, attempt):
                    raise self._unavailable(exc) from exc
                continue
            self._mark(True)
            return result
        raise AssertionError("unreachable")

    def _write_once(self, work: Callable[[_Tx], T]) -> T:
        with self._connection() as conn:
            conn.autocommit = False
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
                    result = work(_Tx(cur))
            except BaseException:
                if not conn.closed:
                    try:
                        conn.rollback()
                    except self._lost:
                        pass
                raise
            try:
                conn.commit()
            except self._lost as exc:
                raise _CommitUnknown("the database did not confirm the commit") from exc
            finally:
                if not conn.closed:
                    try:
                        conn.autocommit = True
                    except self._lost:
                        pass
            return result

    # -------------------------------------------------------------- lifecycle
    def ping(self) -> bool:
        """True when the database answers now; raises StoreUnavailable when it does not."""
        return super().ping()

    def close(self) -> None:
        self._closed.set()
        self._pool.close(timeout=2.0)

    def pool_stats(self) -> dict[str, int]:
        """The pool's counters (for /metrics and the bench): size, available, waiting, ..."""
        return dict(self._pool.get_stats())
