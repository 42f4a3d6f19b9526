"""Connection discipline for the lesson's server: idle connections cannot starve the learner.

The standard library's threading server gives every connection a thread
that waits for a request forever, and when the process runs out of file
descriptors its accept loop spins at 100 % CPU. Anyone on the machine can
open connections to 127.0.0.1 without the token, so:

- a connection must send its request within `REQUEST_TIMEOUT` seconds
  (per read), or it is closed;
- at most `MAX_CONNECTIONS` are open at once: a new one beyond that closes
  the oldest *idle* connection (one that has not yet sent a whole request)
  first, so a page with the token always gets in, however many idle sockets
  others hold open;
- at the open-file limit, an accept that fails closes the oldest idle
  connection (or, with none to close, waits a little) instead of retrying
  at once.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from typing import Any

MAX_CONNECTIONS = 128
REQUEST_TIMEOUT = 20.0
OUT_OF_FILES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
BACKOFF = 0.05


class GuardedConnections:
    """A mixin for `socketserver` servers (before `ThreadingHTTPServer` in the bases)."""

    max_connections = MAX_CONNECTIONS
    request_queue_size = 64

    def _conns(self) -> dict[Any, list[Any]]:
        table = self.__dict__.get("_conn_table")
        if table is None:
            table = self.__dict__.setdefault("_conn_table", {})
            self.__dict__.setdefault("_conn_lock", threading.Lock())
        return table

    @property
    def _lock(self) -> threading.Lock:
        self._conns()
        return self.__dict__["_conn_lock"]

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns())

    def get_request(self) -> tuple[Any, Any]:
        try:
            return super().get_request()  # type: ignore[misc]
        except OSError as exc:
            if exc.errno in OUT_OF_FILES and not self.evict_idle(1):
                time.sleep(BACKOFF)  # nothing to free: never a busy loop at the file limit
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._conns()[request] = [False, time.monotonic()]  # [active, since]
            over = len(self._conns()) - self.max_connections
        if over > 0:
            self.evict_idle(over, keep=request)
        super().process_request(request, client_address)  # type: ignore[misc]

    def mark_active(self, request: Any) -> None:
        """The connection sent a whole request (it passed the read phase)."""
        with self._lock:
            entry = self._conns().get(request)
            if entry is not None:
                entry[0] = True

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._conns().pop(request, None)
        super().shutdown_request(request)  # type: ignore[misc]

    def evict_idle(self, n: int, keep: Any = None) -> int:
        """Close the `n` oldest idle connections (their threads then end); how many were closed."""
        with self._lock:
            idle = sorted(((since, req) for req, (active, since) in self._conns().items()
                           if not active and req is not keep), key=lambda x: x[0])[:n]
            for _, req in idle:
                self._conns()[req][0] = True  # being closed: never picked twice
        for _, req in idle:
            try:
                req.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(idle)
