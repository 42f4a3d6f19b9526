"""The check queue outlives the server (CONTRACT §7.1) and the server opens files enough for a lab.

Through the installed console script, real HTTP on loopback, `kill -9` as an operator's
machine would: a check waiting in the queue when the server dies runs again when it starts,
and its result reaches the learner's page by itself (an event on its open stream; the page's
step data holds it too).
"""

from __future__ import annotations

import json
import re
import resource
import threading
import time

import pytest
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow

SLEEPY = ("import time\nimport numpy as np\n\n"
          "def dot_scores(q, k):\n    time.sleep(1.5)\n    return q @ np.swapaxes(k, -1, -2)\n")
RIGHT = implementation("step1", "correct_einsum")


def _resume(h: HostProcess, link: str):
    c = h.client()
    path = link.split("://", 1)[1].split("/", 1)[1]
    r = c.get("/" + path)
    if r.status_code == 200 and 'name="csrf"' in r.text:
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        r = c.post("/" + path, data={"csrf": csrf})
    assert r.status_code == 303, r.text
    return c


def _check_in_background(c, headers) -> None:
    """A page's check request; it dies with the server (kill -9), as the page's would."""
    def run() -> None:
        try:
            c.post("/api/step/step1/check", json={}, headers=headers)
        except Exception:  # noqa: BLE001 - the server was killed under it
            pass

    threading.Thread(target=run, daemon=True).start()


def _position(c, headers) -> int | None:
    return c.get("/api/queue", headers=headers).json()["position"]


def _wait_for(what, deadline_s: float = 120.0):
    deadline = time.monotonic() + deadline_s
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def test_a_queued_check_survives_kill_9_and_its_result_reaches_the_page(tmp_path):
    data = tmp_path / "class"
    h = HostProcess(data)  # one check worker
    try:
        a, ta, _ = h.join("Sleeper")
        b, tb, link_b = h.join("Waiter")
        ha, hb = {"X-Attn-Token": ta}, {"X-Attn-Token": tb}
        assert a.post("/api/step/step1/save", json={"content": SLEEPY, "base": ""}, headers=ha).is_success
        assert b.post("/api/step/step1/save", json={"content": RIGHT, "base": ""}, headers=hb).is_success
        _check_in_background(a, ha)
        _wait_for(lambda: _position(a, ha) == 0)  # A's sleeping check holds the worker
        _check_in_background(b, hb)
        _wait_for(lambda: _position(b, hb) == 1)  # B's waits behind it
    finally:
        h.kill9()

    again = HostProcess(data)
    try:
        b2 = _resume(again, link_b)
        heard: dict = {}
        with b2.stream("GET", "/api/events") as stream:
            deadline = time.monotonic() + 180
            event = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "checked":
                    heard = json.loads(line[6:])
                    break
                if time.monotonic() > deadline:
                    break
        page = b2.get("/api/step/step1").json()
        assert heard, f"no result on the page's event stream after the restart; step data: {page}"
        assert heard["step"] == "step1" and heard["status"] == "passed", heard
        assert page["last_report"] is not None and page["last_report"]["status"] == "passed"
    finally:
        again.stop()


def test_the_server_raises_its_open_files_limit_to_the_hard_one(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(256, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))  # the host inherits a low soft limit
    try:
        h = HostProcess(tmp_path / "class")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        limits = open(f"/proc/{h.proc.pid}/limits").read()
        row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        got_soft, got_hard = row.split()[3:5]
        assert got_soft == got_hard, row
        if hard != resource.RLIM_INFINITY:
            assert int(got_soft) == hard > low
    finally:
        h.stop()
