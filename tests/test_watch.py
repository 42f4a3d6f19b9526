"""`attn-practice watch`: the loop driven with fake keys and files, a real engine, and a real tmux."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import termios
import time
from pathlib import Path

import pytest
from conftest import correct_solutions, joined, make_workspace, run
from rich.console import Console

from attn_practice.grader.catalog import load_catalog, resolve_step
from attn_practice.grader.results import GradeReport, Status, StepResult
from attn_practice.grader.teaching.practice import CheckOutcome, first_unpassed, record
from attn_practice.grader.teaching.watch import (
    FilePoller,
    LineKeys,
    TtyKeys,
    WatchLoop,
    open_key_source,
)
from attn_practice.grader.teaching.workspace import Progress, Workspace


class FakeKeys:
    """Keys for successive ticks (None: no key this tick); then `q`, so a loop always ends."""

    def __init__(self, *keys: str | None):
        self.keys = list(keys)
        self.timeouts: list[float] = []

    def read(self, timeout: float) -> str | None:
        self.timeouts.append(timeout)
        return self.keys.pop(0) if self.keys else "q"


class FakeFiles:
    """A poller whose snapshot the test changes by `save(name)`."""

    def __init__(self):
        self.snap = {e.file: (0, 0) for e in load_catalog()}
        self.polls = 0

    def save(self, name: str) -> None:
        mtime, size = self.snap[name]
        self.snap[name] = (mtime + 1, size)

    def __call__(self):
        self.polls += 1
        return dict(self.snap)


class FakeChecker:
    """Grades nothing: a step passes when the test says so. Records progress like `run_check`."""

    def __init__(self):
        self.passing: set[str] = set()
        self.checked: list[str] = []
        self.closed = False

    def __call__(self, ws: Workspace, steps, state) -> CheckOutcome:
        results = []
        for ex in steps:
            self.checked.append(ex.id)
            ok = ex.id in self.passing
            results.append(StepResult(id=ex.id, title=ex.title, status=Status.PASSED if ok else Status.FAILED,
                                      score=float(ok), max_score=1.0, file=ex.file, function=ex.function))
        report = GradeReport(submission=str(ws.root), steps=tuple(results))
        record(state, report)
        ws.save_state(state)
        catalog = load_catalog()
        return CheckOutcome(report, state, first_unpassed(state, catalog),
                            {e.id: len(e.hints) for e in catalog})

    def close(self) -> None:
        self.closed = True


def make_loop(ws: Path, keys: FakeKeys, **kw) -> tuple[WatchLoop, Console, FakeFiles, FakeChecker]:
    console = Console(record=True, width=100, no_color=True)
    files, checker = FakeFiles(), FakeChecker()
    sleeps: list[float] = []
    loop = WatchLoop(Workspace(ws), console=console, keys=keys, poller=files, checker=checker,
                     clock=iter(range(10_000)).__next__, sleep=sleeps.append, **kw)
    loop.sleeps = sleeps  # type: ignore[attr-defined]
    return loop, console, files, checker


# ------------------------------------------------------------------ the loop
def test_checks_at_start_on_each_save_and_moves_on_when_it_passes(workspace):
    keys = FakeKeys(None, None, None, None)
    loop, console, files, checker = make_loop(workspace, keys)
    loop.begin()
    assert checker.checked == ["step1"] and loop.current.id == "step1"
    loop.tick()  # nothing saved: nothing checked
    assert checker.checked == ["step1"]
    files.save("step1_scores.py")
    loop.tick()
    assert checker.checked == ["step1", "step1"] and loop.current.id == "step1"
    checker.passing.add("step1")
    files.save("step3_softmax.py")  # any step file counts (step files import each other)
    loop.tick()
    assert checker.checked == ["step1"] * 3
    assert loop.current.id == "step2"
    text = joined(console.export_text())
    assert "Now watching step2" in text and "edit step2_scale.py" in text
    assert "checked in 1.0 s" in text  # the injected clock
    assert loop.run() == 0  # the next key is q
    assert checker.closed and loop.done
    assert set(keys.timeouts) == {0.5}


def test_saves_in_quick_succession_give_one_check(workspace):
    loop, _, files, checker = make_loop(workspace, FakeKeys(None))

    loop.begin()
    changes = iter([1, 2])

    def poller():
        n = next(changes, None)
        if n is not None:
            files.save("step1_scores.py")
        return files()

    loop.poller = poller
    loop.tick()
    assert checker.checked == ["step1", "step1"]
    assert loop.sleeps == [0.15, 0.15]  # waited until the files were still


def test_keys_hint_list_next_check_help_quit(workspace):
    loop, console, _, checker = make_loop(workspace, FakeKeys("h", "h", "l", "c", "x", "?", "n", "q"))
    assert loop.run() == 0
    text = joined(console.export_text())
    assert Workspace(workspace).load_state().step("step1").hints == 2
    assert "hint 2 of" in text
    assert "press h again" in text and "attn-practice hint" not in text  # the key, not a command
    assert "Progress in" in text
    assert "unknown key 'x'" in text and "Keys: c check now" in text
    assert checker.checked == ["step1", "step1", "step2"]  # start, c, n (skips on to step2)
    assert loop.current.id == "step2"
    assert "Stopped watching" in text


def test_starts_at_the_given_step_and_stops_at_the_last(workspace):
    loop, console, _, checker = make_loop(workspace, FakeKeys("n"), start=resolve_step("step8"))
    loop.run()
    assert checker.checked == ["step8"]
    assert "step8 is the last step" in console.export_text()


def test_all_passed_means_nothing_to_watch(workspace):
    ws = Workspace(workspace)
    state = ws.load_state()
    for e in load_catalog():
        state.step(e.id).status = Progress.PASSED
    ws.save_state(state)
    loop, console, _, checker = make_loop(workspace, FakeKeys())
    assert loop.run() == 0
    assert checker.checked == [] and "Every step has passed" in console.export_text()


def test_ctrl_c_is_a_clean_exit(workspace):
    class Interrupting(FakeKeys):
        def read(self, timeout):
            raise KeyboardInterrupt

    loop, console, _, checker = make_loop(workspace, Interrupting())
    assert loop.run() == 0
    assert "Stopped watching (Ctrl-C)" in console.export_text()
    assert checker.closed


def test_an_engine_failure_is_reported_and_watching_goes_on(workspace):
    loop, console, files, checker = make_loop(workspace, FakeKeys(None))

    def broken(ws, steps, state):
        raise RuntimeError("the sandbox fork server exited unexpectedly")

    loop.checker = broken
    loop.begin()
    assert "could not check step1" in console.export_text() and not loop.done


# ------------------------------------------------------------------ key sources
def test_line_keys_from_a_pipe_and_from_a_stream():
    r, w = os.pipe()
    os.write(w, b"h\nhint\n\nq")
    os.close(w)
    keys = LineKeys(fd=r, sleep=lambda s: None)
    got = [keys.read(0.1) for _ in range(6)]
    os.close(r)
    assert got[:2] == ["h", "h"] and "q" in got and got[-1] is None and keys.eof
    keys = LineKeys(stream=io.StringIO("N\nl\n"), sleep=lambda s: None)
    assert [keys.read(0.1) for _ in range(3)] == ["n", "l", None]


def test_open_key_source_cbreak_on_a_terminal_and_restores_it():
    master, slave = os.openpty()
    try:
        before = termios.tcgetattr(slave)
        assert before[3] & termios.ICANON
        with os.fdopen(os.dup(slave), "r") as stream, open_key_source(stream) as keys:
            assert isinstance(keys, TtyKeys)
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak: keys come at once
            os.write(master, b"h")
            assert keys.read(1.0) == "h"
            assert keys.read(0.01) is None
            os.write(master, b"\x1b[A")  # an arrow key is ignored
            assert keys.read(1.0) is None
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)
    with open_key_source(io.StringIO("q\n")) as keys:
        assert isinstance(keys, LineKeys) and keys.read(0) == "q"


def test_file_poller_sees_saves_and_deletions(tmp_path):
    poll = FilePoller(tmp_path, ["a.py", "b.py"])
    assert poll() == {"a.py": None, "b.py": None}
    (tmp_path / "a.py").write_text("x = 1\n")
    first = poll()
    assert first["a.py"] is not None
    (tmp_path / "a.py").write_text("x = 12\n")
    assert poll() != first


# ------------------------------------------------------------------ real engine
def test_real_checks_in_a_real_workspace_without_a_terminal(workspace):
    """The default (warm-engine) checker, real files, no TTY: step 1 passes, watch moves to step 2."""
    console = Console(record=True, width=100, no_color=True)
    keys = FakeKeys(None, "q")
    loop = WatchLoop(Workspace(workspace), console=console, keys=keys, interval=0.01)
    loop.begin()
    assert loop.current.id == "step1" and loop.checks == 1
    path = workspace / "step1_scores.py"
    correct_solutions(workspace, ["step1"])
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a save the poller cannot miss
    t0 = time.perf_counter()
    loop.tick()
    took = time.perf_counter() - t0
    assert loop.checks == 2, console.export_text()
    assert loop.current.id == "step2"
    assert Workspace(workspace).load_state().step("step1").status is Progress.PASSED
    assert loop.run() == 0  # q
    assert loop.checker.engine is None  # closed
    assert took < 30


def test_watch_command_with_piped_input(workspace):
    res = run(["watch"], workspace, input="q\n")
    assert res.exit_code == 0, res
    assert "attn-practice watch · step1" in res.stdout and "Stopped watching" in res.stdout
    assert run(["watch", "step9"], workspace).exit_code == 2


# ------------------------------------------------------------------ tmux
class Tmux:
    """One tmux server of our own (its own socket), so nothing else is touched."""

    def __init__(self, exe: str, name: str):
        self.exe, self.name = exe, name

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> str:
        return subprocess.run([self.exe, "-L", self.name, *args], capture_output=True, text=True,
                              check=False, env=env).stdout

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self("capture-pane", "-p", "-t", self.name)
            if text in joined(screen):
                return screen
            time.sleep(0.25)
        raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")


@pytest.mark.slow
def test_watch_in_a_real_terminal(tmp_path):
    exe = shutil.which("attn-practice")
    if not shutil.which("tmux") or not exe:
        pytest.skip("needs tmux and the installed attn-practice script")
    ws = make_workspace(tmp_path)
    tmux = Tmux(shutil.which("tmux"), f"attnp-watch-{os.getpid()}")
    status = tmp_path / "exit-status"
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX")}
    command = f"{exe} watch; echo $? > {status}; stty -a > {status}.stty; sleep 60"
    tmux("new-session", "-d", "-s", tmux.name, "-x", "110", "-y", "45", "-c", str(ws), command, env=env)
    try:
        tmux.wait_for("watching step1 (step1_scores.py)")
        correct_solutions(ws, ["step1"])  # the learner saves a correct step 1
        screen = tmux.wait_for("Now watching step2")
        assert "✓ Step 1" in screen and "Passed step1" in joined(screen)
        assert "watch · step1" in screen and "NotImplementedError" not in screen  # cleared, redrawn
        tmux("send-keys", "-t", tmux.name, "q")
        deadline = time.monotonic() + 20
        while not (tmp_path / "exit-status.stty").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        assert status.read_text().strip() == "0"
        stty = (tmp_path / "exit-status.stty").read_text()
        assert " icanon" in stty and " echo " in stty  # the terminal is back in normal mode
        assert "Stopped watching" in tmux("capture-pane", "-p", "-t", tmux.name)
        assert Workspace(ws).load_state().step("step1").status is Progress.PASSED
    finally:
        tmux("kill-server")
