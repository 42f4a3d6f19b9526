"""A grader killed with -9 (the OOM killer, `kill -9`, a Dask nanny's timeout) leaves nothing behind.

Its fork server notices the grader is gone (the control socket closes, and it
has been handed to another parent), kills and reaps every sandbox, removes
its cgroups, and now also its temp folder: the learners' files in /dev/shm
(memory, on a machine that grades for months) that only the dead grader
would have removed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from live_processes import alive

pytestmark = pytest.mark.slow

GRADER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from attn_practice.grader.sandbox.launcher import Launcher
    from attn_practice.grader.sandbox.learner import Learner, Limits

    launcher = Launcher()
    learner = Learner(launcher, Path("probe-dir"), step_id="step1", module="probe", function="f",
                      params=("x",), limits=Limits(call_timeout=30.0, load_timeout=60.0),
                      display_dir="probe-dir", files={"probe.py": b"def f(x):\\n    return x\\n"})
    learner.call(np.zeros(1))  # a sandbox stays open, its folder inside the launcher's
    print(launcher.root, launcher.pid, learner.sandbox.pid, flush=True)
    time.sleep(600)
""")


STARTING = textwrap.dedent("""
    import time
    from attn_practice.grader.sandbox import prestart

    prestart.prestart()  # the fork server starts (importing NumPy) while we are killed
    proc, ctl, root = prestart._READY
    print(root, proc.pid, flush=True)
    time.sleep(600)
""")


def _kill_9(script: str, words: int, before: Callable[[list[str]], None] = lambda _: None) -> list[str]:
    """Run `script` as a grader, read the line it prints (`words` words, checked by `before`
    while the grader lives), then kill -9 its group; that line's words."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert len(line) == words, f"the grader did not start as it should: {line!r}"
        before(line)
        return line
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the grader's group only: the fork server has its own
        proc.wait()


def _nothing_left(pids: dict[str, int], root: Path) -> None:
    """Wait (up to a minute) until none of `pids` runs and `root` is gone."""
    deadline = time.monotonic() + 60
    while any(alive(p) for p in pids.values()) or root.exists():
        assert time.monotonic() < deadline, (
            f"left behind: {', '.join(name for name, p in pids.items() if alive(p))}; folder {root.exists()}")
        time.sleep(0.1)


def test_a_grader_killed_with_9_leaves_no_fork_server_sandbox_or_folder():
    def sandbox_folder_inside(line: list[str]) -> None:
        root = Path(line[0])
        assert root.is_dir() and any(root.iterdir()), "the sandbox's folder is in the launcher's"

    line = _kill_9(GRADER, 3, sandbox_folder_inside)
    _nothing_left({"fork server": int(line[1]), "sandbox": int(line[2])}, Path(line[0]))


def test_a_grader_killed_while_its_fork_server_starts_leaves_no_folder():
    """Killed before the fork server could ask who its parent is: it is told, at its start."""
    line = _kill_9(STARTING, 2)
    _nothing_left({"fork server": int(line[1])}, Path(line[0]))
