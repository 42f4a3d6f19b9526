"""Starting a hosted class: open the store, the check pool and the app, then serve with uvicorn.

`open_class` does everything that can fail with a message (the data folder,
the database, the course, the port) before anything is printed; `serve`
then runs uvicorn on the already-bound socket until SIGINT/SIGTERM, and
closes the queue, the workers and the store. The CLI prints `ClassLinks`
(CONTRACT §7's three first lines) in between.
"""

from __future__ import annotations

import contextlib
import gc
import ipaddress
import os
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_practice.grader.host.auth import ClassKeys, ensure_class_settings
from attn_practice.grader.host.context import HostContext
from attn_practice.grader.host.limits import Limits
from attn_practice.grader.host.store.base import Store
from attn_practice.grader.host.store.factory import open_store

DEFAULT_DIR = "attn-class"
DEFAULT_PORT = 8770
GRACEFUL_SECONDS = 3
KEEP_ALIVE_SECONDS = 5


@dataclass(frozen=True)
class HostConfig:
    data_dir: Path
    course: Path | None = None
    bind: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    db: str | None = None
    dask: str | None = None
    jobs: int | None = None
    ask_student_id: bool | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: proxies whose X-Forwarded-For/-Proto are believed (uvicorn's list: "10.0.0.5,10.1.0.0/16");
    #: None: no one's, the peer's address is the client's
    forwarded_allow_ips: str | None = None
    log_file: Path | None = None  # --log: the per-request and per-check lines (the terminal stays quiet)


@dataclass(frozen=True)
class ClassLinks:
    base: str
    instructor: str
    join: str


def is_loopback(bind: str) -> bool:
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def open_data(data_dir: Path, db: str | None) -> Store:
    """The class's store (creating the data folder, private to its owner)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(data_dir, 0o700)
    except OSError as exc:
        raise ValueError(f"cannot use {data_dir} as the class's data folder: "
                         f"{exc.strerror or exc}. Pick another DATA_DIR.") from None
    return open_store(db, data_dir)


class HostedClass:
    def __init__(self, config: HostConfig):
        from attn_practice.grader.catalog import load_catalog
        from attn_practice.grader.host.checks.factory import open_runner
        from attn_practice.grader.host.checks.work import host_options

        self.config = config
        self._closed = False
        course = None
        if config.course is not None:
            from attn_practice.grader.course import load_course

            course = load_course(config.course, check_suites=False)
        self.sock = _bind(config.bind, config.port)
        try:
            self.store = open_data(config.data_dir, config.db)
        except BaseException:
            self.sock.close()
            raise
        try:
            ask = config.ask_student_id  # the flag wins; else the course file's `student_id: true`
            if ask is None and course is not None and course.student_id:
                ask = True
            ensure_class_settings(self.store, ask_student_id=ask)
            if config.course is not None:
                self.store.set_setting("course_path", str(config.course.resolve()))
            runner = open_runner(config.dask, host_options(course), config.jobs)
        except BaseException:  # nothing half-open is left behind (socket, database)
            self.sock.close()
            self.store.close()
            raise
        catalog = list(course.steps) if course is not None and course.steps else load_catalog()
        limits = Limits()
        if course is not None and getattr(course, "max_learners", None):
            limits.max_learners = course.max_learners
        self.ctx = HostContext(self.store, runner, catalog, course=course, limits=limits)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=_warm, args=(runner,), name="attnp-warm", daemon=True).start()

    @property
    def scheme(self) -> str:
        return "https" if self.config.tls_cert else "http"

    def links(self) -> ClassLinks:
        keys = ClassKeys.load(self.store)
        host = self.config.bind
        host = f"[{host}]" if ":" in host else host
        base = f"{self.scheme}://{host}:{self.port}"
        return ClassLinks(f"{base}/", f"{base}/teach?key={keys.instructor_key}",
                          f"{base}/join/{keys.join_code}")

    def serve(self) -> None:
        import uvicorn

        from attn_practice.grader.host import ops_log
        from attn_practice.grader.host.app import build_app
        from attn_practice.grader.host.connections import ConnectionGuard, guarded_protocol

        ops_log.configure_host(self.config.log_file)  # the terminal: warnings and a summary a minute
        extra: dict[str, Any] = {}
        if self.config.tls_cert:
            extra = {"ssl_certfile": str(self.config.tls_cert),
                     "ssl_keyfile": str(self.config.tls_key) if self.config.tls_key else None}
        forwarded = self.config.forwarded_allow_ips
        guard = self.ctx.connections = ConnectionGuard()  # /metrics reports what it closed
        config = uvicorn.Config(build_app(self.ctx), log_level="warning", access_log=False,
                                timeout_graceful_shutdown=GRACEFUL_SECONDS, lifespan="on",
                                http=guarded_protocol(guard),
                                timeout_keep_alive=KEEP_ALIVE_SECONDS,
                                proxy_headers=bool(forwarded), forwarded_allow_ips=forwarded or "",
                                server_header=False, **extra)
        # What is loaded by now (modules, the app, the catalogue) lives as long as the server:
        # the collector need not walk it again at every full collection, mid-request.
        gc.collect()
        gc.freeze()
        try:
            _quiet_server(uvicorn.Server)(config).run(sockets=[self.sock])
        finally:
            self.close()

    def close(self) -> None:
        """Stop taking checks, end the workers, close the store; once, however the stop came."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sock.close()
        finally:
            try:
                self.ctx.close()
            finally:
                self.ctx.limits.close()


def _quiet_server(base: Any) -> Any:
    """uvicorn's Server, but a SIGINT/SIGTERM stops it and returns (uvicorn re-raises the signal
    after its shutdown, which would kill us before the workers and the store are closed)."""

    class Server(base):  # type: ignore[misc, valid-type]
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            old = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in old.items():
                    signal.signal(sig, handler)

    return Server


def _bind(bind: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off only on sockets that say they are TCP
    # (`connections.guarded_protocol` also does it itself); with it on, every answer on a
    # kept-alive connection waited ~40 ms for the browser's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _warm(runner: Any) -> None:
    warm = getattr(runner, "warm", None)
    if warm is not None:
        try:
            warm()
        except Exception:  # noqa: BLE001 - warming is an optimisation; checks report real errors
            pass


def set_password(data_dir: Path, db: str | None, password: str) -> None:
    from attn_practice.grader.host.auth import set_instructor_password

    store = open_data(data_dir, db)
    try:
        ensure_class_settings(store)
        set_instructor_password(store, password)  # and every instructor session ends
    finally:
        store.close()
