"""`attn-practice watch`: re-check the current step whenever a step file is saved.

Rustlings' model: one current step; every save re-checks it, the screen is
cleared and redrawn; when it passes, watch moves on to the next step. Keys
(read without blocking): h hint, n next step, l list, c check now, q quit.

Files are polled (mtime and size, every `interval` seconds): it works the
same on every file system, editors' save tricks (write to a temp file and
rename) included. Everything the loop touches is injectable: the key
source, the poller, the checker, the clock and sleep, so tests drive it
without a terminal.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from attn_practice.grader.catalog import Exercise, load_catalog

if TYPE_CHECKING:
    from rich.console import Console

    from attn_practice.grader.engine.engine import Engine
    from attn_practice.grader.teaching.outcome import CheckOutcome
    from attn_practice.grader.teaching.workspace import State, Workspace

Snapshot = dict[str, "tuple[int, int] | None"]
Checker = Callable[["Workspace", Sequence[Exercise], "State"], "CheckOutcome"]

KEYS_HELP = "c check now · h hint · n next step · l list · q quit"


# ================================================================ key sources
class KeySource(Protocol):
    def read(self, timeout: float) -> str | None:
        """One key pressed within `timeout` seconds (lower-case), or None."""


class TtyKeys:
    """Single key presses from a terminal in cbreak mode (see `open_key_source`)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pending: list[str] = []

    def read(self, timeout: float) -> str | None:
        if not self.pending:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            data = os.read(self.fd, 64)
            if not data:
                return None
            text = data.decode("utf-8", "replace")
            if text.startswith("\x1b"):  # arrow keys and other escape sequences: ignore
                return None
            self.pending.extend(text)
        return self.pending.pop(0).lower()


class LineKeys:
    """Commands typed as lines on a non-terminal stdin (a pipe): `h`, `hint`, `q`...

    The first letter of each line counts. At end of input it just waits.
    """

    def __init__(self, fd: int | None = None, stream: io.TextIOBase | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.fd = fd
        self.stream = stream
        self.sleep = sleep
        self.buffer = ""
        self.lines: list[str] = []
        self.eof = False

    def _fill(self, timeout: float) -> None:
        if self.fd is not None:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return
            data = os.read(self.fd, 4096)
            if not data:
                self.eof = True
            self.buffer += data.decode("utf-8", "replace")
        else:
            assert self.stream is not None
            line = self.stream.readline()
            if not line:
                self.eof = True
            self.buffer += line
        *complete, self.buffer = self.buffer.split("\n")
        self.lines.extend(complete)
        if self.eof and self.buffer:
            self.lines.append(self.buffer)
            self.buffer = ""

    def read(self, timeout: float) -> str | None:
        while not self.lines:
            if self.eof:
                self.sleep(timeout)
                return None
            self._fill(timeout)
            if not self.lines and self.fd is not None:
                return None
        line = self.lines.pop(0).strip().lower()
        return line[:1] or None


@contextlib.contextmanager
def open_key_source(stream: object | None = None) -> Iterator[KeySource]:
    """Keys from stdin: cbreak mode on a terminal (restored on exit), lines otherwise."""
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        yield LineKeys(stream=stream)  # type: ignore[arg-type]
        return
    if not os.isatty(fd):
        yield LineKeys(fd=fd)
        return
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)  # keys arrive one by one, unechoed; Ctrl-C still interrupts
        yield TtyKeys(fd)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


# ================================================================== polling
class FilePoller:
    """(mtime_ns, size) of each watched file, None when it does not exist."""

    def __init__(self, root: Path, names: Sequence[str]):
        self.root = Path(root)
        self.names = list(names)

    def __call__(self) -> Snapshot:
        snap: Snapshot = {}
        for name in self.names:
            try:
                st = os.stat(self.root / name)
                snap[name] = (st.st_mtime_ns, st.st_size)
            except OSError:
                snap[name] = None
        return snap


class WarmChecker:
    """`run_check` with one engine kept warm between checks (pytest, Hypothesis, the zygote).

    The engine's options are refreshed from the state before each check, as
    `run_check` would build them; a broken engine is replaced on the next check.
    """

    def __init__(self) -> None:
        self.engine: Engine | None = None

    def __call__(self, ws: Workspace, steps: Sequence[Exercise], state: State) -> CheckOutcome:
        from attn_practice.grader.engine.engine import Engine
        from attn_practice.grader.teaching.practice import check_options, run_check

        if self.engine is None:
            self.engine = Engine(check_options(state, steps))
        try:
            return run_check(ws, steps, state, engine=self.engine)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            try:
                engine.close()
            except Exception:  # noqa: BLE001 - closing a broken engine must not hide the real error
                pass


# ================================================================== the loop
class WatchLoop:
    """Watch a workspace: check the current step on every save, move on when it passes."""

    def __init__(
        self,
        ws: Workspace,
        *,
        console: Console,
        keys: KeySource,
        poller: Callable[[], Snapshot] | None = None,
        checker: Checker | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        interval: float = 0.5,
        settle: float = 0.15,
        start: Exercise | None = None,
        catalog: Sequence[Exercise] | None = None,
        clear: bool = True,
    ):
        self.ws = ws
        self.console = console
        self.keys = keys
        self.catalog = list(catalog or load_catalog())
        self.poller = poller or FilePoller(ws.root, [e.file for e in self.catalog])
        self.checker = checker or WarmChecker()
        self.clock = clock
        self.sleep = sleep
        self.interval = interval
        self.settle = settle
        self.clear = clear
        self.current: Exercise | None = start
        self.done = False
        self.checks = 0
        self.last_outcome: CheckOutcome | None = None
        self._seen: Snapshot = {}

    # -- driving ------------------------------------------------------------
    def run(self, max_ticks: int | None = None) -> int:
        """Watch until `q` (or Ctrl-C, or `max_ticks` ticks); always exit status 0."""
        try:
            self.begin()
            ticks = 0
            while not self.done and (max_ticks is None or ticks < max_ticks):
                self.tick()
                ticks += 1
        except KeyboardInterrupt:
            self.done = True
            self.console.print()
            self.console.print("Stopped watching (Ctrl-C). Your progress is saved.")
        finally:
            close = getattr(self.checker, "close", None)
            if callable(close):
                close()
        return 0

    def begin(self) -> None:
        self._seen = self.poller()
        if self.current is None:
            state = self.ws.load_state(self.catalog)
            todo = [e for e in self.catalog if not state.step(e.id).passed]
            if not todo:
                self.console.print("[bold green]Every step has passed.[/] Nothing to watch: "
                                   "try `attn-practice explore sentence`.")
                self.done = True
                return
            self.current = todo[0]
        self.check("start")

    def tick(self) -> None:
        """One round: handle a key if one comes within `interval`, then look at the files."""
        key = self.keys.read(self.interval)
        if key:
            self.handle_key(key)
        if self.done:
            return
        if self._changed():
            self.check("saved")

    def _changed(self) -> bool:
        snap = self.poller()
        if snap == self._seen:
            return False
        # Wait until the files stop changing: an editor may write in several steps.
        for _ in range(20):
            self._seen = snap
            if self.settle <= 0:
                break
            self.sleep(self.settle)
            snap = self.poller()
            if snap == self._seen:
                break
        self._seen = snap
        return True

    # -- actions ------------------------------------------------------------
    def handle_key(self, key: str) -> None:
        action = {"q": self.quit, "c": lambda: self.check("key"), "h": self.hint,
                  "n": self.next_step, "l": self.show_list, "?": self.help}.get(key)
        if action is None:
            self.console.print(f"(unknown key {key!r}: {KEYS_HELP})", style="dim")
            return
        action()

    def quit(self) -> None:
        self.done = True
        self.console.print("Stopped watching. Your progress is saved.")

    def help(self) -> None:
        self.console.print(f"Keys: {KEYS_HELP}")

    def check(self, reason: str = "saved") -> CheckOutcome | None:
        """Check the current step, redraw the screen; on a pass, move on to the next step."""
        from rich.rule import Rule

        from attn_practice.grader.teaching.screens import render_check, working

        ex = self.current
        if ex is None:
            return None
        state = self.ws.load_state(self.catalog)
        t0 = self.clock()
        try:
            with working(self.console, f"Checking {ex.id}…"):
                outcome = self.checker(self.ws, [ex], state)
        except (RuntimeError, OSError) as exc:
            self.console.print(f"[bold red]could not check {ex.id}:[/] {exc}. Save again to retry.")
            return None
        took = self.clock() - t0
        self.checks += 1
        self.last_outcome = outcome
        if self.clear:
            self.console.clear()
        self.console.print(Rule(f"attn-practice watch · {ex.id} · {ex.title}", align="left"))
        render_check(self.console, outcome, watching=True)
        passed = bool(outcome.report.steps) and all(s.passed for s in outcome.report.steps)
        if passed:
            nxt = self._next_unpassed(ex, outcome.state)
            if nxt is None:
                self.console.print("[bold green]Every step has passed.[/] Keep editing and "
                                   "watch re-checks; q quits.")
            else:
                self.current = nxt
                self.console.print(f"[bold]Now watching {nxt.id}[/] ({nxt.title}): edit {nxt.file} "
                                   "and save to check it.")
        self._footer(took)
        return outcome

    def hint(self) -> None:
        from attn_practice.grader.teaching.screens import render_hints

        ex = self.current
        if ex is None:
            return
        state = self.ws.load_state(self.catalog)
        st = state.step(ex.id)
        newly = st.hints < len(ex.hints)
        if newly:
            st.hints += 1
            self.ws.save_state(state)
        render_hints(self.console, ex, st.hints, newly=newly, watching=True)

    def next_step(self) -> None:
        ex = self.current
        if ex is None:
            return
        later = [e for e in self.catalog if e.number > ex.number]
        if not later:
            self.console.print(f"{ex.id} is the last step; nothing to skip to.")
            return
        self.current = later[0]
        self.check("skip")

    def show_list(self) -> None:
        from attn_practice.grader.teaching.screens import render_status

        state = self.ws.load_state(self.catalog)
        render_status(self.console, self.ws, self.catalog, state)
        self._footer(None)

    def _next_unpassed(self, after: Exercise, state: State) -> Exercise | None:
        """The next step not yet passed, after `after` in course order, else the first one."""
        todo = [e for e in self.catalog if not state.step(e.id).passed]
        later = [e for e in todo if e.number > after.number]
        return (later or todo or [None])[0]

    def _footer(self, took: float | None) -> None:
        ex = self.current
        where = f"{ex.id} ({ex.file})" if ex else "all steps"
        timing = f" · checked in {took:.1f} s" if took is not None else ""
        self.console.print(f"watching {where}{timing} · keys: {KEYS_HELP}", style="dim")


__all__ = ["FilePoller", "KeySource", "LineKeys", "TtyKeys", "WarmChecker", "WatchLoop",
           "open_key_source"]
