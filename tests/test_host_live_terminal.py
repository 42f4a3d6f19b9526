"""A terminal an instructor can read (CONTRACT §7.1): after its first lines `host` prints only
warnings, errors and at most one summary line a minute; `--log FILE` gets one logfmt line per
request and per check; Ctrl-C with learners' event streams open stops it cleanly, without a
traceback and without waiting out the server's grace period for each open page.

The installed console script in its own process group, Ctrl-C sent to the group as a terminal
does; the learners' pages are real HTTP clients holding /api/events open.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow

STOP_BOUND = 60  # seconds: only "it stops", on a loaded machine; the cleanliness is asserted below


def _hold_stream(client, path: str, opened: threading.Event, lines: list[str]) -> None:
    try:
        with client.stream("GET", path, timeout=120) as r:
            for line in r.iter_lines():
                lines.append(line)
                opened.set()
    except Exception:  # noqa: BLE001 - the server went away: the stream is over
        pass


def _session(h: HostProcess, learners: int = 3) -> list[threading.Thread]:
    """Learners join, save, check (one a known mistake) and keep their pages' streams open."""
    threads = []
    teach = h.client()
    assert teach.get(f"/teach?key={h.key}").status_code == 303
    clients = [(teach, "/teach/api/events")]
    for i in range(learners):
        c, token, _ = h.join(f"L{i}")
        headers = {"X-Attn-Token": token}
        for n in range(5):
            assert c.post("/api/step/step1/save", json={"content": f"# draft {n}\n", "base": None},
                          headers=headers).status_code == 200
        c.post("/api/step/step2/save", json={"content": implementation("step2", "wrong_scale_by_dk"),
                                             "base": None}, headers=headers)
        assert c.post("/api/step/step2/check", json={}, headers=headers).status_code == 200
        c.get("/api/summary")
        c.get("/api/step/step2")
        clients.append((c, "/api/events"))
    for client, path in clients:
        opened = threading.Event()
        t = threading.Thread(target=_hold_stream, args=(client, path, opened, []), daemon=True)
        t.start()
        assert opened.wait(30), f"{path} did not open"
        threads.append(t)
    return threads


def _ctrl_c(h: HostProcess) -> None:
    os.killpg(h.proc.pid, signal.SIGINT)
    try:
        h.proc.wait(timeout=STOP_BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(h.proc.pid, signal.SIGKILL)
        raise AssertionError("Ctrl-C did not stop the class") from None


def test_a_session_leaves_the_links_readable_and_ctrl_c_is_clean(tmp_path):
    log = tmp_path / "ops.log"
    h = HostProcess(tmp_path / "class", "--log", str(log))
    started = time.monotonic()
    try:
        streams = _session(h)
        _ctrl_c(h)
        elapsed_minutes = (time.monotonic() - started) / 60
    finally:
        out, err = h.stop()
    assert h.proc.returncode == 0, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines[0].startswith("Class data: ") and "From now on" in lines[1]
    assert lines[-1].startswith("Stopped hosting")
    middle = lines[2:-1]
    summaries = [x for x in middle if "last minute:" in x]
    assert len(middle) == len(summaries), f"lines beyond the summary: {middle}"
    assert len(summaries) <= int(elapsed_minutes) + 1
    assert "event=request" not in err and "Traceback" not in err and "CancelledError" not in err
    # the streams were ended at once, not cancelled when the grace period ran out
    assert "graceful shutdown exceeded" not in err and "still open at shutdown" not in err
    assert "Stopped hosting" in err
    for t in streams:
        t.join(timeout=30)
        assert not t.is_alive(), "a page's event stream outlived the server"

    logged = log.read_text().splitlines()
    requests = [x for x in logged if "event=request" in x]
    checks = [x for x in logged if "event=check" in x]
    assert len(checks) == 3 and all("step=step2" in x and "status=failed" in x for x in checks)
    assert len(requests) >= 3 * 5 + 3, "the log misses request lines"
    assert any('route="GET /api/events"' in x for x in requests)  # the streams, logged as they closed
    assert h.key not in log.read_text() and h.join_code not in log.read_text()


def test_ctrl_c_right_after_the_pages_opened_their_streams(tmp_path):
    """The plainest case of the old traceback: open pages, nothing else, Ctrl-C."""
    h = HostProcess(tmp_path / "class")
    try:
        opened = []
        for i in range(4):
            c, _, _ = h.join(f"P{i}")
            ev = threading.Event()
            threading.Thread(target=_hold_stream, args=(c, "/api/events", ev, []), daemon=True).start()
            opened.append(ev)
        assert all(ev.wait(30) for ev in opened)
        _ctrl_c(h)
    finally:
        out, err = h.stop()
    assert h.proc.returncode == 0, err
    assert "Traceback" not in err and "CancelledError" not in err and "ERROR" not in err, err
    assert "graceful shutdown exceeded" not in err


def test_the_summary_line_says_a_minute_in_one_line():
    import logging

    from attn_practice.grader.host import ops_log
    from attn_practice.grader.host.ops_terminal import Summary

    summary = Summary()
    assert summary.line() is None  # nothing happened: nothing printed
    record = logging.LogRecord("x", logging.INFO, "", 0, "%s", None, None)
    for msg in [ops_log.line("request", route="GET /", status=200, outcome="ok", ms=1.0)] * 7 + [
            ops_log.line("request", route="POST /api/step/{step}/{action}", status=429, outcome="refused"),
            ops_log.line("check", learner="aaaa", step="step2", status="failed", diagnoses=1),
            ops_log.line("check", learner="bbbb", step="step2", status="passed", diagnoses=0),
            ops_log.line("check", learner="aaaa", step="step2", status="passed", diagnoses=0)]:
        record.args = (msg,)
        summary.emit(record)
    text = summary.line()
    assert text is not None and "\n" not in text
    assert "2 learners checked" in text and "3 checks (2 passed, 1 failed)" in text
    assert "8 requests" in text and "1 refused" in text
    assert summary.line() is None  # counted once


def test_uvicorns_shutdown_noise_becomes_one_plain_line():
    """A request cancelled when the grace period ends (a check still running) is one warning
    line, never uvicorn's CancelledError traceback."""
    import asyncio
    import io
    import logging

    from attn_practice.grader.host.ops_terminal import ShutdownNoise

    logger = logging.getLogger("test-uvicorn-error")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.addFilter(ShutdownNoise())
    logger.propagate = False
    try:
        logger.error("Cancel %s running task(s), timeout graceful shutdown exceeded", 2)
        try:
            raise asyncio.CancelledError("Task cancelled, timeout graceful shutdown exceeded")
        except asyncio.CancelledError:
            logger.error("Exception in ASGI application\n", exc_info=True)
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert "Traceback" not in text and "CancelledError" not in text and "ERROR" not in text
    assert len(text.splitlines()) == 2 and "nothing saved is lost" in text


def test_the_summary_printer_writes_one_line_per_period_only_when_something_happened():
    import io
    import logging

    from attn_practice.grader.host import ops_log
    from attn_practice.grader.host.ops_terminal import Summary, SummaryPrinter

    summary, out = Summary(), io.StringIO()
    printer = SummaryPrinter(summary, out, every=0.2).start()
    try:
        record = logging.LogRecord("x", logging.INFO, "", 0, "%s",
                                   (ops_log.line("check", learner="aaaa", step="step1", status="passed"),),
                                   None)
        summary.emit(record)
        deadline = time.monotonic() + 30
        while "last minute:" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.6)  # three more periods with nothing new: nothing more printed
    finally:
        printer.stop()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "1 learner checked" in lines[0] and "1 check (1 passed)" in lines[0]
