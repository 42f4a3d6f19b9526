"""Connections bounded before any request exists: slow headers and bodies, connections per address.

uvicorn times out only idle keep-alive connections, and a byte every few
seconds restarts even that: 1,100 connections each sending one header line
every 4 s once held the server. `guarded_protocol` makes uvicorn's h11
protocol

- close a connection whose request head is not complete `HEAD_SECONDS`
  after it opened (or after its previous response), and one whose body is
  not complete `BODY_SECONDS` after that;
- keep at most `PENDING_PER_ADDRESS` connections per address, and
  `PENDING_TOTAL` in all, waiting for a request head: a new connection
  closes the oldest waiting one from its address (then the oldest of all),
  one that never sent a whole request before a browser's kept-alive one,
  so a real browser, which sends its head at once, always gets answered,
  whoever floods from the same address (a lab behind one NAT);
- refuse an address's connections beyond `OPEN_PER_ADDRESS` open at once.

The address is the peer's, as the socket sees it (a reverse proxy's, behind
one): forwarded headers are for requests, not for connections.
"""

from __future__ import annotations

import asyncio
import socket
from collections import OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0
BODY_SECONDS = 30.0
PENDING_PER_ADDRESS = 256
PENDING_TOTAL = 1024
OPEN_PER_ADDRESS = 2048


class ConnectionGuard:
    """The bookkeeping shared by one server's connections (event-loop thread only)."""

    def __init__(self, per_address: int = PENDING_PER_ADDRESS, total: int = PENDING_TOTAL,
                 open_per_address: int = OPEN_PER_ADDRESS):
        self.per_address, self.total, self.open_per_address = per_address, total, open_per_address
        self.pending: OrderedDict[Any, str] = OrderedDict()  # protocol -> address, oldest first
        self.by_address: dict[str, OrderedDict[Any, bool]] = {}  # protocol -> served one already
        self.open: dict[str, int] = {}
        self.evicted = 0
        self.timed_out = 0

    def opened(self, address: str) -> bool:
        """Count a new connection; False when its address already has too many open."""
        n = self.open.get(address, 0)
        if n >= self.open_per_address:
            return False
        self.open[address] = n + 1
        return True

    def closed(self, proto: Any, address: str) -> None:
        self.done_waiting(proto)
        n = self.open.get(address, 0) - 1
        if n > 0:
            self.open[address] = n
        else:
            self.open.pop(address, None)

    def waiting(self, proto: Any, address: str, served: bool) -> None:
        """`proto` waits for a request head (`served`: it answered one already, a browser's
        kept-alive connection); evict the oldest waiters beyond the caps, those that never
        sent a whole request first."""
        self.done_waiting(proto)
        self.pending[proto] = address
        mine = self.by_address.setdefault(address, OrderedDict())
        mine[proto] = served
        while len(mine) > self.per_address:
            self._evict(_oldest(mine))
        while len(self.pending) > self.total:
            self._evict(_oldest({p: p.served for p in self.pending}))

    def done_waiting(self, proto: Any) -> None:
        address = self.pending.pop(proto, None)
        if address is not None:
            mine = self.by_address.get(address)
            if mine is not None:
                mine.pop(proto, None)
                if not mine:
                    del self.by_address[address]

    def _evict(self, proto: Any) -> None:
        self.done_waiting(proto)
        self.evicted += 1
        proto.close_slow()


def _oldest(waiting: dict[Any, bool]) -> Any:
    """The oldest waiter that never sent a whole request, else the oldest of all."""
    return next((p for p, served in waiting.items() if not served), next(iter(waiting)))


def _no_delay(transport: asyncio.Transport) -> None:
    """Nagle off: uvicorn writes an answer's head and body apart, and with Nagle on the body
    waits for the ACK of the head, which a browser delays ~40 ms on a kept-alive connection."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def guarded_protocol(guard: ConnectionGuard, head_seconds: float = HEAD_SECONDS,
                     body_seconds: float = BODY_SECONDS) -> type[H11Protocol]:
    """uvicorn's h11 protocol with `guard`'s bounds (pass as `uvicorn.Config(http=...)`)."""

    class GuardedH11Protocol(H11Protocol):
        _address = "?"
        _cycle_no = 0
        served = False
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            _no_delay(transport)
            self._address = self.client[0] if self.client else "?"
            if not guard.opened(self._address):
                self._address = ""  # not counted: nothing to give back
                transport.abort()
                return
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            if self._address:
                guard.closed(self, self._address)
                self._address = ""
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self._address and self.conn.their_state is not h11.IDLE:
                guard.done_waiting(self)  # the head is in: a request, not a waiting connection

        def on_response_complete(self) -> None:
            super().on_response_complete()  # may start a pipelined request at once
            if (not self.transport.is_closing() and self._address
                    and self.conn.their_state is h11.IDLE):
                self._await_head()

        def _await_head(self) -> None:
            self.served = self._cycle_no > 0
            self._cycle_no += 1
            guard.waiting(self, self._address, self.served)
            self._stop_timer()
            self._timer = self.loop.call_later(head_seconds, self._head_due, self._cycle_no)

        def _head_due(self, cycle_no: int) -> None:
            if cycle_no != self._cycle_no:
                return
            if self.conn.their_state is h11.IDLE:
                guard.timed_out += 1
                self.close_slow()
            elif self.conn.their_state is h11.SEND_BODY:
                self._timer = self.loop.call_later(body_seconds, self._body_due, cycle_no)

        def _body_due(self, cycle_no: int) -> None:
            if cycle_no == self._cycle_no and self.conn.their_state is h11.SEND_BODY:
                guard.timed_out += 1
                self.close_slow()

        def _stop_timer(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def close_slow(self) -> None:
            """Close a connection too slow to say what it wants (its request, if any, is told)."""
            self._stop_timer()
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
