"""Ctrl-C in a terminal during `grade`, as course staff press it: SIGINT to the whole group.

The pool's workers are in the terminal's group too. Only the command may
answer: "Interrupted." and exit 130, no worker's KeyboardInterrupt traceback,
and no worker, fork server or sandbox left running afterwards. (The hosted
class's Ctrl-C: tests/test_host_cli.py and test_host_pg_processes.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from live_processes import processes
from test_grade import make_submission
from test_host_support import console_script

pytestmark = pytest.mark.slow


def _descendants(root: int) -> dict[int, str]:
    procs = processes()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, cmd) in procs.items():
            if ppid == parent and pid not in found:
                found[pid] = cmd
                frontier.append(pid)
    return found


def _left_of(group: int, seen: dict[int, str]) -> dict[int, str]:
    """What still runs of the command's group, or of the processes it was seen to start."""
    procs = processes()
    return {pid: cmd for pid, (_, pgid, cmd) in procs.items() if pgid == group or pid in seen}


def _sandbox_running(seen: dict[int, str]) -> bool:
    """A process started by a sandbox fork server (a sandbox) is among those seen."""
    zygotes = {pid for pid, cmd in seen.items() if "zygote" in cmd}
    return any(processes().get(pid, (0,))[0] in zygotes for pid in seen)


@pytest.mark.parametrize("when", ["workers starting", "sandboxes running"])
def test_ctrl_c_mid_class_stops_the_pool_quietly_and_leaves_nothing_running(tmp_path, when):
    subs = [str(make_submission(tmp_path / "class" / f"s{i:02d}")) for i in range(40)]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "COLUMNS": "200"}
    env.pop("ATTN_PRACTICE_DEBUG", None)
    proc = subprocess.Popen([console_script(), "grade", *subs, "--jobs", "2", "--no-cache", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own group, as a terminal gives a command
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 180
        ready = (lambda: any("zygote" in cmd for cmd in seen.values())) if when == "workers starting" \
            else (lambda: _sandbox_running(seen))
        while not ready():
            assert proc.poll() is None, "the class was graded before the test could interrupt it"
            assert time.monotonic() < deadline, f"never saw: {when}"
            seen.update(_descendants(proc.pid))
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Interrupted." in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    deadline = time.monotonic() + 60
    while left := _left_of(proc.pid, seen):
        assert time.monotonic() < deadline, f"left running after the command ended: {left}"
        time.sleep(0.2)
    assert Path(subs[0]).is_dir()  # the submissions themselves are untouched
