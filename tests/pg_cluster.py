"""A throwaway PostgreSQL cluster for the tests: real server, Unix socket only, nothing left behind.

Why a real one: the hosted class's PostgreSQL store must survive the things
a mock cannot do (a server that stops mid-class, two server processes on one
database, LISTEN/NOTIFY between them). `initdb` refuses to run as root and the
tests run as root here, so the cluster belongs to an unprivileged uid (65534,
"nobody") when we are root, and to the current user otherwise. Its data
directory and socket live in one fresh temp directory (not pytest's tmp_path:
root's 0700 pytest folder is not reachable by uid 65534); it listens on no TCP
port at all; dynamic shared memory lives in the data directory, not /dev/shm.
`close()` stops the server and removes the directory, so a test run leaves no
process, user or file behind.

Where a cluster is impossible (no PostgreSQL binaries, or root without the
right to switch uid), `cluster_or_skip()` skips with the reason.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: the unprivileged owner of the cluster when the tests run as root
NOBODY = 65534
PORT = 5432  # only names the socket file (.s.PGSQL.5432) in our own directory
START_TIMEOUT = 60


def find_bindir() -> Path | None:
    """The newest PostgreSQL server binaries: Debian's versioned folder, else PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl and shutil.which("initdb"):
        return Path(pg_ctl).parent
    return None


class PgCluster:
    """One initdb'd cluster in a temp dir; `start()`, `stop()`, `restart()`, `close()`."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="attn-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"
        if self.as_root:
            os.chown(self.root, NOBODY, NOBODY)
        self.socket_dir.mkdir()
        if self.as_root:
            os.chown(self.socket_dir, NOBODY, NOBODY)
        self.running = False

    # -- running the server's own tools as its owner -------------------------------------------
    def _run(self, *argv: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
        kwargs: dict = {}
        if self.as_root:
            kwargs = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        env = {"PATH": f"{self.bindir}:/usr/bin:/bin", "HOME": str(self.root), "LC_ALL": "C",
               "TZ": "UTC"}
        return subprocess.run([str(self.bindir / argv[0]), *argv[1:]], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False, **kwargs)

    def init(self) -> None:
        """`initdb` with trust auth for the `postgres` role (the socket is in our own 0700 tree)."""
        out = self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                        "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
        if out.returncode != 0:
            raise RuntimeError(f"initdb failed: {out.stderr.strip() or out.stdout.strip()}")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(
                "\n# attn-practice tests: Unix socket only, state inside the data directory\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                f"port = {PORT}\n"
                "dynamic_shared_memory_type = mmap\n"
                "max_connections = 200\n"
                "shared_buffers = 16MB\n"
                "fsync = off\n"  # the OS does not crash in a test; a server stop still loses nothing
                "full_page_writes = off\n"
                "logging_collector = off\n"
            )
        if self.as_root:
            os.chown(self.data / "postgresql.conf", NOBODY, NOBODY)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        out = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w",
                        "-t", str(START_TIMEOUT), "start")
        if out.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {out.stderr.strip()}\n{self.server_log()}")
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: disconnect clients and shut down; `immediate`: like a crash)."""
        if not self.running:
            return
        out = self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")
        if out.returncode != 0:
            self._kill_postmaster()
        self.running = False

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def _kill_postmaster(self) -> None:
        pidfile = self.data / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(pidfile.read_text().splitlines()[0])
            os.kill(pid, signal.SIGQUIT)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop the server and remove every file it had."""
        try:
            self.stop("fast")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- for clients --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """A libpq URL for the `postgres` database over the Unix socket."""
        return f"postgresql://postgres@/postgres?host={self.socket_dir}&port={PORT}"

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@/{name}?host={self.socket_dir}&port={PORT}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        out = self._run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
                        "-p", str(PORT), "-U", "postgres", "-d", database, "-c", sql, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout

    def create_database(self, name: str) -> str:
        """A fresh database in this cluster; its URL."""
        self.psql(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def why_impossible() -> str | None:
    """Why no throwaway cluster can run here, or None when one can."""
    bindir = find_bindir()
    if bindir is None:
        return ("PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's "
                "`postgresql` (.ci/run does when it is root)")
    if os.geteuid() == 0:
        try:
            out = subprocess.run(["/bin/true"], user=NOBODY, group=NOBODY, extra_groups=[],
                                 capture_output=True, timeout=10, check=False)
        except (OSError, PermissionError, subprocess.SubprocessError) as exc:
            return f"running as root but cannot switch to uid {NOBODY} for initdb: {exc}"
        if out.returncode != 0:
            return f"running as root but cannot run a program as uid {NOBODY}"
    return None


@contextlib.contextmanager
def cluster_or_skip() -> Iterator[PgCluster]:
    """A started cluster for the block, or `pytest.skip` with the reason it cannot exist here."""
    reason = why_impossible()
    if reason:
        pytest.skip(reason)
    cluster = PgCluster(find_bindir())  # type: ignore[arg-type]
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.close()
