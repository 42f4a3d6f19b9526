"""The fork server's wait for a killed or exiting sandbox: woken by the exit, bounded by a deadline.

`Zygote._wait` is on the path of every reap the grader waits for. Where the
kernel has pidfds it sleeps until the process exits; elsewhere it polls.
Both ways must return the child's own wait status, and None at the deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from attn_practice.grader.sandbox import zygote
from attn_practice.grader.sandbox.zygote import Zygote


def _waiter() -> Zygote:
    """A fork server's waiting part only (no control socket, no jail)."""
    z = Zygote.__new__(Zygote)
    z.exited = {}
    return z


@pytest.fixture(params=["pidfd", "polling"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "polling":
        monkeypatch.setattr(zygote, "_pidfd", lambda pid: None)
    elif zygote._pidfd(os.getpid()) is None:
        pytest.skip("this kernel has no pidfd_open (Linux 5.3+)")
    return request.param


def test_the_wait_returns_the_childs_own_status_once_it_exits(way: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import os, time; time.sleep(0.3); os._exit(7)"])
    status = _waiter()._wait(child.pid, time.monotonic() + 120)  # a ceiling, not a timing target
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7


def test_the_wait_reports_a_killed_child_as_killed(way: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    os.kill(child.pid, signal.SIGKILL)
    status = _waiter()._wait(child.pid, time.monotonic() + 120)
    assert status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_the_wait_gives_up_at_its_deadline(way: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert _waiter()._wait(child.pid, time.monotonic() + 0.2) is None
    finally:
        child.kill()
        child.wait()


def test_a_child_already_collected_is_answered_from_what_was_collected(way: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import os; os._exit(3)"])
    _pid, status = os.waitpid(child.pid, 0)
    z = _waiter()
    z.exited[child.pid] = status  # as `_reap_zombies` leaves it
    assert z._wait(child.pid, time.monotonic() + 120) == status
