"""What `host` prints on the instructor's terminal once its links are out: little, and readable.

A lab of 200 makes thousands of requests an hour; one line each scrolls the
instructor and join links away and hides the one warning that matters. So
the terminal gets warnings and errors as they happen and, at most once a
minute and only when something happened, one summary line (learners
checking, checks by verdict, requests, refusals). Every request and check
line goes to `--log FILE` instead (ops_log's logfmt), for grep and alerts.

A request still open when the server stops (an event stream, a check) is
said in one line, never as uvicorn's CancelledError traceback.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections import Counter
from typing import TextIO

SUMMARY_SECONDS = 60.0
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def fields(message: str) -> dict[str, str]:
    """The key=value pairs of one logfmt line (quotes kept off)."""
    return {k: v.strip('"') for k, v in _FIELD.findall(message)}


class Summary(logging.Handler):
    """Counts the ops log's request and check lines; `line()` says a minute's worth in one line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._lock2 = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.requests = 0
        self.outcomes: Counter[str] = Counter()
        self.checks: Counter[str] = Counter()
        self.learners: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            got = fields(record.getMessage())
        except Exception:  # noqa: BLE001 - a summary never breaks logging
            return
        with self._lock2:
            if got.get("event") == "request":
                self.requests += 1
                self.outcomes[got.get("outcome", "?")] += 1
            elif got.get("event") == "check":
                self.checks[got.get("status", "?")] += 1
                if "learner" in got:
                    self.learners.add(got["learner"])

    def line(self) -> str | None:
        """The summary since the last call, or None when nothing happened (and reset)."""
        with self._lock2:
            if not self.requests and not self.checks:
                return None
            checks = sum(self.checks.values())
            verdicts = ", ".join(f"{n} {status}" for status, n in self.checks.most_common())
            parts = [f"{len(self.learners)} learner{'s' if len(self.learners) != 1 else ''} checked",
                     f"{checks} check{'s' if checks != 1 else ''}" + (f" ({verdicts})" if verdicts else ""),
                     f"{self.requests} request{'s' if self.requests != 1 else ''}"]
            refused, failed = self.outcomes["refused"], self.outcomes["failed"] + self.outcomes["unavailable"]
            if refused:
                parts.append(f"{refused} refused")
            if failed:
                parts.append(f"{failed} failed (see warnings above)")
            self._reset()
        return f"{time.strftime('%H:%M')} last minute: " + " · ".join(parts)


class SummaryPrinter:
    """A daemon thread printing `summary.line()` to `stream` every `every` seconds, when any."""

    def __init__(self, summary: Summary, stream: TextIO, every: float = SUMMARY_SECONDS) -> None:
        self.summary, self.stream, self.every = summary, stream, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attnp-summary", daemon=True)

    def start(self) -> SummaryPrinter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            text = self.summary.line()
            if text:
                try:
                    self.stream.write(text + "\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    return


class ShutdownNoise(logging.Filter):
    """uvicorn's traceback for a request cancelled at shutdown, as one plain line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError):
            self._plain(record, "a request still open at shutdown was stopped (its page reconnects "
                                "to the next server; nothing saved is lost)")
        elif "timeout graceful shutdown exceeded" in str(record.msg):
            self._plain(record, "stopping: requests still running were cut short (nothing saved "
                                "is lost)")
        return True

    @staticmethod
    def _plain(record: logging.LogRecord, text: str) -> None:
        record.msg, record.args, record.exc_info, record.exc_text = text, (), None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"


def quiet_shutdown() -> None:
    """Install `ShutdownNoise` on uvicorn's error logger (once)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, ShutdownNoise) for f in logger.filters):
        logger.addFilter(ShutdownNoise())
