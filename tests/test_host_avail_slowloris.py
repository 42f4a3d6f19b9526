"""Attacks that need no account (issue 35, class 3), on the real server over loopback.

Hundreds of connections that send their headers a line at a time, and
bodies that trickle in: the server closes them by itself, and meanwhile
answers /healthz, the instructor and a signed-in learner. A password guess
is refused by the rate limiter before any scrypt runs: once an address has
used its attempts, even the right password waits.
"""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time

import pytest
from test_host_support import HostProcess, console_script

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow

SLOW = 300  # slow connections from one address (more than it may keep waiting)
#: how long the test waits for the server to close them (its head timeout is 10 s, body 30 s)
GIVE_UP = 120


@pytest.fixture
def host(tmp_path):
    proc = HostProcess(tmp_path / "class")
    try:
        yield proc
    finally:
        proc.stop()


def _slow(port: int, first: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(first)
    return s


def _closed_by_server(s: socket.socket) -> bool:
    """True once the server closed `s` (EOF, a reset, or an answer followed by EOF)."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _trickle(socks: list[socket.socket], line: bytes, stop: threading.Event) -> None:
    """One more line on every still-open connection every second, as a slowloris does."""
    while not stop.wait(1.0):
        for s in socks:
            try:
                s.sendall(line)
            except OSError:
                pass


def test_slow_headers_and_bodies_are_closed_and_the_class_still_answers(host):
    learner, _, _ = host.join("Signed-in")
    teacher = host.client()
    assert teacher.get(f"/teach?key={host.key}").status_code == 303
    heads = [_slow(host.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n") for _ in range(SLOW)]
    body = (b"POST /api/step/step1/save HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{")
    bodies = [_slow(host.port, body) for _ in range(20)]
    stop = threading.Event()
    feeders = [threading.Thread(target=_trickle, args=(heads, b"X-A: b\r\n", stop), daemon=True),
               threading.Thread(target=_trickle, args=(bodies, b" ", stop), daemon=True)]
    for t in feeders:
        t.start()
    try:
        # while they hang on: an outsider's probe, the instructor and a learner are answered
        fresh = host.client()
        assert fresh.get("/healthz").status_code == 200
        assert teacher.get("/teach").status_code == 200
        assert teacher.get("/teach/api/class").status_code == 200
        assert learner.get("/api/summary").status_code == 200
        deadline = time.monotonic() + GIVE_UP
        open_ = heads + bodies
        while open_ and time.monotonic() < deadline:
            open_ = [s for s in open_ if not _closed_by_server(s)]
            time.sleep(0.5)
        assert not open_, f"{len(open_)} slow connections were never closed by the server"
        assert fresh.get("/healthz").status_code == 200
        assert learner.get("/api/summary").status_code == 200
        metrics = fresh.get("/metrics", params={"key": host.key}).text
        closed = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"^attnp_connections_(evicted|timed_out)_total (\d+)$", metrics, re.M)}
        assert closed.get("evicted", 0) + closed.get("timed_out", 0) >= SLOW, metrics
    finally:
        stop.set()
        for t in feeders:
            t.join(timeout=10)
        for s in heads + bodies:
            s.close()


def test_an_idle_connection_cannot_be_kept_open_by_a_byte_now_and_then(host):
    """Keep-alive after a request: a byte every second must not hold the connection forever."""
    s = _slow(host.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    stop = threading.Event()
    feeder = threading.Thread(target=_trickle, args=([s], b"G", stop), daemon=True)
    feeder.start()
    try:
        deadline = time.monotonic() + GIVE_UP
        while not _closed_by_server(s) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert time.monotonic() < deadline, "a trickling keep-alive connection was never closed"
    finally:
        stop.set()
        feeder.join(timeout=10)
        s.close()


def test_a_password_guess_is_refused_before_scrypt_once_the_address_is_limited(tmp_path):
    data = tmp_path / "class"
    password = "correct horse battery"
    made = subprocess.run([console_script(), "host", "set-password", str(data)], capture_output=True,
                          text=True, timeout=120, input=f"{password}\n{password}\n")
    assert made.returncode == 0, made.stderr
    proc = HostProcess(data)
    try:
        c = proc.client()
        page = c.get("/teach")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        codes = [c.post("/teach/login", data={"csrf": csrf, "password": f"guess {i}"}).status_code
                 for i in range(30)]
        assert set(codes) <= {403, 429} and codes.count(429) >= 15, codes
        # the limiter is asked first: the right password is not even tried now
        r = c.post("/teach/login", data={"csrf": csrf, "password": password})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert "Too many attempts" in r.text
        # the instructor's link (the key, not a guess) still signs in
        assert proc.client().get(f"/teach?key={proc.key}").status_code == 303
    finally:
        proc.stop()
