"""How a batch shows it is alive: a bar on a terminal, a log line at most every 10 s in CI.

Without a terminal (a CI log, output to files) a batch used to print nothing
until the end, so a long class looked hung. `Progress` writes, to stderr:
on a terminal, a rich bar; otherwise a plain line
`grading: 40/300 done, 1.9/s, 3 failing` at most once per `interval`
seconds, and in both cases one summary line at the end. It only draws:
the batch calls `advance` with each report as it lands.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from attn_practice.grader.results import GradeReport

#: Seconds between two log lines without a terminal.
LOG_INTERVAL = 10.0


class Progress:
    """done/total, rate and failures of a batch, drawn on `stream` (default stderr)."""

    def __init__(self, total: int, *, enabled: bool, stream: IO[str] | None = None,
                 interval: float = LOG_INTERVAL, clock: Any = time.monotonic,
                 log: bool | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        # `log` None: lines only to a real file or pipe (a CI log), never into an in-process
        # capture (Click's test runner, a notebook) where they would mix with the report.
        self.enabled = enabled and total > 1 and (self._has_fd() if log is None else log)
        self.interval = interval
        self.clock = clock
        self.failures = 0
        self.done = 0
        self.t0 = clock()
        self._last_line = self.t0
        self._bar: Any = None

    def _has_fd(self) -> bool:
        try:
            self.stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            return False
        return True

    def _tty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __enter__(self) -> Progress:
        if self.enabled and self._tty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("grading"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}/s"), TimeRemainingColumn(),
                            TextColumn("[red]{task.fields[failures]} failing"),
                            console=Console(file=self.stream), transient=False)
            self._bar.start()
            self._task = self._bar.add_task("grading", total=self.total, rate="0.0", failures=0)
        return self

    def rate(self) -> float:
        return self.done / max(self.clock() - self.t0, 1e-9)

    def advance(self, report: GradeReport) -> None:
        self.done += 1
        self.failures += not report.passed
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, rate=f"{self.rate():.1f}", failures=self.failures)
            return
        now = self.clock()
        if now - self._last_line >= self.interval and self.done < self.total:
            self._last_line = now
            self._line(f"grading: {self.done}/{self.total} done, {self.rate():.1f}/s, "
                       f"{self.failures} failing")

    def _line(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.stop()
        elapsed = self.clock() - self.t0
        self._line(f"graded {self.done}/{self.total} in {elapsed:.1f} s ({self.rate():.1f}/s); "
                   f"{self.failures} not fully passing")


__all__ = ["LOG_INTERVAL", "Progress"]
