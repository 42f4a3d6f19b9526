"""`serve` across restarts, and what it keeps to itself (issue 20.2, issue 18.6).

The console script in a subprocess, as a learner runs it: the token and the
port are kept per workspace (0600 in a 0700 folder), so the page's address
and token still work after a restart; `--rotate-token` or another workspace
on the port turn the old token away with words; a thousand idle connections
without the token do not keep the learner's own request out, even at the
open-file limit.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import textwrap

import pytest
from serve_helpers import Served

pytestmark = pytest.mark.slow


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_restart_keeps_the_port_and_the_token(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    port, token = s.port, s.token
    try:
        keep = tmp_path / "ws" / ".attn-practice"
        assert _mode(keep) == 0o700 and _mode(keep / "serve.json") == 0o600
        assert token in (keep / "serve.json").read_text()
        for _ in range(5):  # closed connections leave the port in TIME_WAIT
            assert s.get_json("/api/summary")[0] == 200
    finally:
        s.stop()
    # SO_REUSEADDR: the port of the run that just stopped is free again at once
    again = Served(["ws", "--port", str(port), "--no-open"], tmp_path)
    try:
        assert (again.port, again.token) == (port, token)
        assert again.get_json("/api/summary")[0] == 200
    finally:
        again.stop()
    # without --port, the workspace's own port comes first (an open tab keeps its address)
    third = Served(["ws", "--no-open"], tmp_path)
    try:
        assert (third.port, third.token) == (port, token)
    finally:
        third.stop()


def test_rotate_token_turns_the_old_token_away_with_words(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    port, old = s.port, s.token
    s.stop()
    s = Served(["ws", "--port", str(port), "--no-open", "--rotate-token"], tmp_path)
    try:
        assert s.port == port and s.token != old
        status, d = s.get_json("/api/summary", token=old)
        assert status == 403 and "restarted" in d["error"] and "open the link" in d["error"].lower()
        assert s.get_json("/api/summary")[0] == 200
    finally:
        s.stop()


def test_another_workspace_on_the_same_port_refuses_the_first_ones_token(tmp_path):
    a = Served(["a", "--port", "0", "--no-open"], tmp_path)
    port, token_a = a.port, a.token
    a.stop()
    b = Served(["b", "--port", str(port), "--no-open"], tmp_path)
    try:
        assert b.token != token_a
        assert b.get_json("/api/step/step1", token=token_a)[0] == 403
    finally:
        b.stop()


def test_the_event_stream_takes_the_token_in_its_query(tmp_path):
    """EventSource cannot send a header: the page passes the token in the stream's query."""
    import http.client

    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        conn.request("GET", f"/api/events?token={s.token}", headers={"Host": f"127.0.0.1:{s.port}"})
        res = conn.getresponse()
        assert res.status == 200 and res.getheader("Content-Type", "").startswith("text/event-stream")
        assert res.fp.readline().startswith(b": connected")
        conn.close()
    finally:
        s.stop()


FLOOD = textwrap.dedent("""\
    import http.client, json, resource, socket, sys
    port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:  # this child only: it holds the idle connections
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    idle = []
    for _ in range(n):  # connections that never send a byte, and carry no token
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        idle.append(c)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/api/summary", headers={"Host": f"127.0.0.1:{port}", "X-Attn-Token": token})
    res = conn.getresponse()
    body = json.loads(res.read())
    print(json.dumps({"status": res.status, "steps": len(body.get("steps", [])), "opened": len(idle)}))
    for c in idle:
        c.close()
""")


@pytest.mark.parametrize("max_files", [1000, 160])
def test_the_learners_request_gets_through_1000_idle_connections(tmp_path, max_files):
    """1,000 idle sockets, then a real request: answered, though the server may open only 1,000 or 160 files."""
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path, max_files=max_files)
    try:
        got = subprocess.run([sys.executable, "-c", FLOOD, str(s.port), s.token, "1000"],
                             capture_output=True, text=True, timeout=300)
        assert got.returncode == 0, got.stderr
        out = json.loads(got.stdout)
        assert out == {"status": 200, "steps": 8, "opened": 1000}
        assert s.get_json("/api/summary")[0] == 200  # and it goes on serving afterwards
    finally:
        _, err = s.stop()
    assert s.returncode == 0 and "Traceback" not in err, err


def test_a_connection_that_sends_nothing_is_closed(tmp_path):
    """No request within the server's per-read timeout (20 s): it hangs up, freeing the thread."""
    import socket

    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        with socket.create_connection(("127.0.0.1", s.port), timeout=180) as c:
            assert c.recv(1) == b""  # the server closed it (a ceiling, not a timing: 180 s)
        assert s.get_json("/api/summary")[0] == 200
    finally:
        s.stop()
