"""The operator's log and counters: one line per HTTP request and one per check, nothing private.

What an operator of a class needs from several `host` processes is a stream
they can grep, count and alert on: which kind of request, how it ended, how
long it took; which step a check was for, how it ended, how long it waited
and ran, where it ran. What must never reach a log: learner code, file
contents, names, and the secrets that live in URLs (join codes, resume
links, the instructor key). So a request is logged by its *route class*
(the route's template, `GET /join/{code}`, never the URL), and a learner by
a short one-way tag of their id (enough to follow one learner through the
log, useless to reach them). Lines are logfmt (`key=value`), one per event,
on the `attn_practice.host.ops` logger.

The same events feed `OpsStats`, whose `prometheus()` the app appends to
`/metrics` (requests and checks by outcome, check latency histogram,
database availability): counters are per process, as Prometheus expects.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger("attn_practice.host.ops")

#: check latency histogram bounds, seconds (a lone check takes about one second)
CHECK_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
UNMATCHED = "unmatched"
FORMAT = "%(asctime)s attn-practice[%(process)d] %(message)s"
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./{}:")


class Outcome(str, enum.Enum):
    """How a request ended, as an operator groups them."""

    OK = "ok"  # 1xx-3xx
    REFUSED = "refused"  # 4xx: the client's mistake or a limit
    UNAVAILABLE = "unavailable"  # 503: database or workers away (retry)
    FAILED = "failed"  # other 5xx: our bug


def outcome_of(status: int) -> Outcome:
    if status == 503:
        return Outcome.UNAVAILABLE
    if status >= 500:
        return Outcome.FAILED
    if status >= 400:
        return Outcome.REFUSED
    return Outcome.OK


def learner_tag(learner_id: str) -> str:
    """A short one-way tag for a learner id: follow one learner through the log, reach no one."""
    return hashlib.sha256(("attn-practice-ops:" + learner_id).encode()).hexdigest()[:10]


def _value(v: Any) -> str:
    text = f"{v:.1f}" if isinstance(v, float) else str(v)
    if text and all(c in _SAFE for c in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")[:200] + '"'


def line(event: str, **fields: Any) -> str:
    """One logfmt line: `event=NAME key=value ...` (values quoted when they need it)."""
    return " ".join([f"event={event}"] + [f"{k}={_value(v)}" for k, v in fields.items() if v is not None])


def request_class(scope: dict[str, Any]) -> str:
    """`METHOD /route/{template}` of the route that answered (Starlette sets scope['route'])."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    method = scope.get("method", "?")
    if template is None:
        return f"{method} {UNMATCHED}"
    return f"{method} {template or '/'}"


class OpsStats:
    """Per-process counters behind /metrics; every method is thread-safe and cheap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.request_seconds: Counter[str] = Counter()
        self.checks: Counter[str] = Counter()
        self.check_buckets: Counter[float] = Counter()
        self.check_seconds_sum = 0.0
        self.database_up = 1

    def count_request(self, klass: str, outcome: Outcome, seconds: float) -> None:
        with self._lock:
            self.requests[(klass, outcome.value)] += 1
            self.request_seconds[klass] += seconds

    def count_check(self, status: str, seconds: float) -> None:
        with self._lock:
            self.checks[status] += 1
            self.check_seconds_sum += seconds
            for bound in CHECK_BUCKETS:
                if seconds <= bound:
                    self.check_buckets[bound] += 1

    def prometheus(self) -> str:
        """Prometheus text-format lines (append to the app's own /metrics gauges)."""
        with self._lock:
            out = ["# HELP attnp_requests_total HTTP requests by route class and outcome.",
                   "# TYPE attnp_requests_total counter"]
            for (klass, outcome), n in sorted(self.requests.items()):
                out.append(f'attnp_requests_total{{route="{_label(klass)}",outcome="{outcome}"}} {n}')
            out += ["# HELP attnp_request_seconds_total Time spent answering, by route class.",
                    "# TYPE attnp_request_seconds_total counter"]
            for klass, s in sorted(self.request_seconds.items()):
                out.append(f'attnp_request_seconds_total{{route="{_label(klass)}"}} {s:.6f}')
            out += ["# HELP attnp_check_results_total Checks finished, by step status.",
                    "# TYPE attnp_check_results_total counter"]
            for status, n in sorted(self.checks.items()):
                out.append(f'attnp_check_results_total{{status="{_label(status)}"}} {n}')
            total = sum(self.checks.values())
            out += ["# HELP attnp_check_run_seconds Time a check ran (queue wait excluded).",
                    "# TYPE attnp_check_run_seconds histogram"]
            for bound in CHECK_BUCKETS:
                out.append(f'attnp_check_run_seconds_bucket{{le="{bound}"}} {self.check_buckets[bound]}')
            out += [f'attnp_check_run_seconds_bucket{{le="+Inf"}} {total}',
                    f"attnp_check_run_seconds_sum {self.check_seconds_sum:.6f}",
                    f"attnp_check_run_seconds_count {total}",
                    "# HELP attnp_database_up 1 while this process reaches the class database.",
                    "# TYPE attnp_database_up gauge", f"attnp_database_up {self.database_up}"]
        return "\n".join(out) + "\n"


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


#: this process's counters (one server process, one set)
STATS = OpsStats()


def log_request(klass: str, status: int, seconds: float, stats: OpsStats = STATS) -> None:
    outcome = outcome_of(status)
    stats.count_request(klass, outcome, seconds)
    level = logging.WARNING if outcome in (Outcome.FAILED, Outcome.UNAVAILABLE) else logging.INFO
    log.log(level, line("request", route=klass, status=status, outcome=outcome.value,
                        ms=round(seconds * 1000, 1)))


def log_check(*, learner_id: str, step: str, result: dict[str, Any], wait: float, runner: str,
              stats: OpsStats = STATS) -> None:
    """One check finished: step, verdict, diagnoses count, wait and run time, where it ran.

    `result` is a CheckRunner result; only its status fields are read (never code or output).
    """
    report = result.get("report") or {}
    steps = [s for s in report.get("steps", []) if s.get("id") == step]
    status = "grader-failed" if result.get("grader_failed") else (
        steps[0].get("status", "missing") if steps else ("error" if report.get("error") else "missing"))
    seconds = float(result.get("seconds") or 0.0)
    stats.count_check(str(status), seconds)
    log.info(line("check", learner=learner_tag(learner_id), step=step, status=status,
                  diagnoses=len(steps[0].get("diagnoses", ())) if steps else 0,
                  wait_ms=round(wait * 1000, 1), run_ms=round(seconds * 1000, 1), runner=runner))


def log_database(available: bool, where: str, error: str | None = None, stats: OpsStats = STATS) -> None:
    """The class database went away or came back (logged on the change, not on every request)."""
    stats.database_up = int(available)
    log.warning(line("database", state="back" if available else "away", where=where, error=error))


class OpsLogMiddleware:
    """ASGI middleware: one `event=request` line per HTTP request, by route class, when it ends.

    Streams (server-sent events) are logged when they close, with their whole
    duration. WebSocket and lifespan traffic passes through untouched.
    """

    def __init__(self, app: Any, stats: OpsStats = STATS) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_and_note(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            log_request(request_class(scope), status, time.perf_counter() - t0, self.stats)


def configure(stream: TextIO | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send the ops log to `stream` (stderr) as `TIME attn-practice[PID] event=...` lines.

    The stdlib's own access logs (uvicorn's) print whole URLs, which carry
    secrets here; the host turns those off and relies on these lines.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    return handler


def configure_host(log_file: Path | None = None, stream: TextIO | None = None) -> list[logging.Handler]:
    """The host's logging: the terminal (`stream`, stderr) gets warnings, errors and at most one
    summary line a minute; `log_file`, when given, every request and check line (logfmt).

    Raises OSError when the log file cannot be opened (the caller says so before serving).
    """
    from attn_practice.grader.host.ops_terminal import Summary, SummaryPrinter, quiet_shutdown

    out = stream or sys.stderr
    terminal = logging.StreamHandler(out)
    terminal.setLevel(logging.WARNING)
    terminal.setFormatter(logging.Formatter(FORMAT))
    summary = Summary()
    handlers: list[logging.Handler] = [terminal, summary]
    if log_file is not None:
        to_file = logging.FileHandler(log_file, encoding="utf-8")
        to_file.setFormatter(logging.Formatter(FORMAT))
        handlers.append(to_file)
    for h in handlers:
        log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False
    SummaryPrinter(summary, out).start()
    quiet_shutdown()
    return handlers
