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
from pathlib import Path

import pytest

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


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_grader_killed_with_9_leaves_no_fork_server_sandbox_or_folder():
    proc = subprocess.Popen([sys.executable, "-c", GRADER], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert len(line) == 3, f"the grader did not start its sandbox: {line!r}"
        root, zygote, sandbox = Path(line[0]), int(line[1]), int(line[2])
        assert (root.is_dir() and any(root.iterdir())), "the sandbox's folder is in the launcher's"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the grader's group only: the fork server has its own
        proc.wait()
    deadline = time.monotonic() + 60
    while _running(zygote) or _running(sandbox) or root.exists():
        assert time.monotonic() < deadline, (
            f"left behind: fork server {_running(zygote)}, sandbox {_running(sandbox)}, "
            f"folder {root.exists()}")
        time.sleep(0.1)


def test_a_grader_killed_while_its_fork_server_starts_leaves_no_folder():
    """Killed before the fork server could ask who its parent is: it is told, at its start."""
    proc = subprocess.Popen([sys.executable, "-c", STARTING], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert len(line) == 2, f"the fork server did not start: {line!r}"
        root, zygote = Path(line[0]), int(line[1])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 60
    while _running(zygote) or root.exists():
        assert time.monotonic() < deadline, f"left behind: fork server {_running(zygote)}, folder {root.exists()}"
        time.sleep(0.1)
