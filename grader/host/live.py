"""Live updates: the store's events table, polled, fanned out to server-sent event streams.

Every server process polls `store.events_since(cursor)` (every
`POLL_SECONDS`), so a save handled by one process reaches an instructor's
page served by another within about that long, with no in-process bus to
keep in step. A learner's stream hears only that learner's events (another
tab of theirs reloads after a save, and their check's queue position);
the instructor's hears every learner's, as "class" pings that make the page
fetch the new picture.

Streams end by themselves when the client goes or the server stops; the
page's EventSource reconnects on its own after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool

from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.store.base import Store, StoreUnavailable

POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
QUEUE_SIZE = 100
#: cap on open streams per process, so a flood of connections cannot exhaust memory
MAX_STREAMS = 5000


@dataclass(eq=False)
class Subscriber:
    learner_id: str | None  # None: the instructor (every learner's events)
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = field(
        default_factory=lambda: asyncio.Queue(QUEUE_SIZE))

    def put(self, name: str, data: dict[str, Any]) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # a stream that stopped reading misses events
            self.queue.put_nowait((name, data))


class LiveHub:
    def __init__(self, store: Store):
        self.store = store
        self.subscribers: set[Subscriber] = set()
        self.cursor: int | None = None  # unknown until the store answers (never replay old events)
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        with contextlib.suppress(StoreUnavailable):
            self.cursor = await run_in_threadpool(self.store.last_event_id)
        self._task = asyncio.create_task(self._poll())
        self._hear_shutdown()

    def _hear_shutdown(self) -> None:
        """End every stream as soon as SIGINT/SIGTERM arrives, not after the server's grace.

        The server waits for open responses before its shutdown (and the
        lifespan's `stop`) runs; an event stream never ends by itself, so
        each would be cancelled at the end of the grace period, with a
        CancelledError traceback apiece. The server's own signal handlers
        (installed before the lifespan starts) still run, after ours.
        """
        if threading.current_thread() is not threading.main_thread():
            return  # an app served in a thread (tests): its owner stops it
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(sig)
            if not callable(before):
                continue

            def heard(signum: int, frame: Any, before: Any = before) -> None:
                loop.call_soon_threadsafe(self.end_streams)
                before(signum, frame)

            signal.signal(sig, heard)

    def end_streams(self) -> None:
        """Stop taking streams and end the open ones now (the pages reconnect to the next server)."""
        self._stopping.set()
        for sub in list(self.subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                sub.queue.put_nowait(None)

    async def stop(self) -> None:
        self.end_streams()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def subscribe(self, learner_id: str | None) -> Subscriber | None:
        if len(self.subscribers) >= MAX_STREAMS or self.stopping:
            return None
        sub = Subscriber(learner_id)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def tell_learner(self, learner_id: str, name: str, data: dict[str, Any]) -> None:
        """A process-local message to a learner's open streams (their check's queue position)."""
        for sub in list(self.subscribers):
            if sub.learner_id == learner_id:
                sub.put(name, data)

    async def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                if self.cursor is None:
                    self.cursor = await run_in_threadpool(self.store.last_event_id)
                events, self.cursor = await run_in_threadpool(self.store.events_since, self.cursor)
            except Exception:  # noqa: BLE001 - the database away: /readyz says so; try again soon
                events = []
            for ev in events:
                for sub in list(self.subscribers):
                    if sub.learner_id is None:
                        sub.put("class", {"kind": ev.kind, "learner": ev.learner_id,
                                          "step": ev.data.get("step")})
                    elif sub.learner_id == ev.learner_id and ev.kind == EventKind.SAVED.value:
                        sub.put("file-changed", {"step": ev.data.get("step"),
                                                 "version": ev.data.get("version")})
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), POLL_SECONDS)

    async def stream(self, sub: Subscriber, disconnected: Any) -> AsyncIterator[bytes]:
        """The text/event-stream body for one subscriber."""
        try:
            yield b": connected\nretry: 1000\n\n"
            while not self._stopping.is_set():
                try:
                    item = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    if await disconnected():
                        return
                    yield b": keep-alive\n\n"
                    continue
                if item is None:
                    return
                name, data = item
                yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
        finally:
            self.unsubscribe(sub)
