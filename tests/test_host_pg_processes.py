"""Two `attn-practice host` processes on one real PostgreSQL: one class, any process.

As an operator runs them: the installed console script, twice, same `--db`,
different ports (a load balancer would sit in front). A learner joins and
saves on one process; the instructor watches on the other and sees it within
2 s; the learner's own page works on either. Then the database is stopped
mid-class: both processes answer 503 with Retry-After (and /readyz says so,
/healthz does not), nothing acknowledged is lost, and both recover by
themselves when it returns.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import solution_source
from pg_cluster import cluster_or_skip

httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow

LINKS = re.compile(r"Hosting attn-practice class at (http://127\.0\.0\.1:\d+)/\n"
                   r"Instructor: http://127\.0\.0\.1:\d+(/teach\?key=\S+)\n"
                   r"Join: http://127\.0\.0\.1:\d+(/join/\S+)\n")
LIVE_BOUND = 2.0  # seconds: a save on one process shows on another's instructor page
_names = itertools.count()


class HostProcess:
    """One `attn-practice host` on the class database; `stop()` sends Ctrl-C.

    Its stderr (the ops log: a line per request) goes to `log`, a file beside the data
    folder, and its stdout is drained after the three link lines: a full pipe nobody
    reads would stop the server mid-class. It runs in a session of its own, so a stop
    that Ctrl-C cannot finish also ends its check workers.
    """

    def __init__(self, data_dir: Path, db: str, *extra: str):
        beside = Path(sys.executable).with_name("attn-practice")
        assert beside.exists(), "the attn-practice console script is not installed (pip install -e .)"
        env = {**os.environ, "COLUMNS": "200"}
        env.pop("ATTN_PRACTICE_DEBUG", None)
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.log = data_dir.parent / f"{data_dir.name}.stderr.log"
        self._err = open(self.log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([str(beside), "host", str(data_dir), "--port", "0", "--db", db,
                                      "--jobs", "1", *extra], stdout=subprocess.PIPE, stderr=self._err,
                                     text=True, env=env, start_new_session=True)
        head = "".join(self._line() for _ in range(3))
        m = LINKS.match(head)
        if m is None:
            out, err = self.stop()
            raise AssertionError(f"unexpected first lines {head!r}\nstdout: {out}\nstderr: {err}")
        self.base, self.teach_path, self.join_path = m.groups()
        self._out: list[str] = []
        self._drain = threading.Thread(target=lambda: self._out.extend(self.proc.stdout), daemon=True)
        self._drain.start()

    def _line(self, timeout: float = 90.0) -> str:
        box: list[str] = []
        t = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        return box[0] if box else ""

    def stop(self) -> tuple[str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        drain = getattr(self, "_drain", None)
        if drain is not None:
            drain.join(timeout=5)
            out = "".join(self._out)
        else:
            out = self.proc.stdout.read() if self.proc.stdout else ""
        self._err.close()
        return out, self.log.read_text(errors="replace")


class Browser:
    """One person's cookies across both processes (cookies are per host, not per port)."""

    def __init__(self) -> None:
        self.http = httpx.Client(timeout=30.0, follow_redirects=True)
        self.token = ""

    def get(self, url: str, **kw: Any) -> Any:
        return self.http.get(url, **kw)

    def post_json(self, url: str, body: dict[str, Any]) -> Any:
        return self.http.post(url, json=body, headers={"X-Attn-Token": self.token})

    def join(self, proc: HostProcess, name: str) -> None:
        page = self.get(proc.base + proc.join_path)
        assert page.status_code == 200, page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        joined = self.http.post(proc.base + proc.join_path, data={"display_name": name, "csrf": csrf})
        assert joined.status_code == 200, joined.text
        self.read_token(proc)

    def read_token(self, proc: HostProcess, path: str = "/") -> None:
        page = self.get(proc.base + path)
        assert page.status_code == 200, page.text
        self.token = re.search(r'name="attnp-token" content="([^"]+)"', page.text).group(1)

    def close(self) -> None:
        self.http.close()


class EventLog:
    """A server-sent event stream read in a thread: (arrival time, event name, data)."""

    def __init__(self, browser: Browser, url: str):
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(browser, url), daemon=True)
        self.connected = threading.Event()
        self._thread.start()
        assert self.connected.wait(30), "the event stream did not open"

    def _read(self, browser: Browser, url: str) -> None:
        name = ""
        try:
            with browser.http.stream("GET", url, timeout=httpx.Timeout(30.0, read=None)) as res:
                self.connected.set()
                for line in res.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        self.events.append((time.monotonic(), name, json.loads(line[6:])))
        except httpx.HTTPError:
            return

    def wait_for(self, pred: Any, after: float, timeout: float) -> float | None:
        """Seconds from `after` to the first matching event that arrived after it, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, name, data in list(self.events):
                if at >= after and pred(name, data):
                    return at - after
            time.sleep(0.02)
        return None

    def close(self) -> None:
        self._stop.set()


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture
def two_hosts(cluster, tmp_path):
    """Two host processes started at the same moment on a fresh class database."""
    url = cluster.create_database(f"hosted_{next(_names)}")
    procs: list[HostProcess] = []
    errors: list[BaseException] = []

    def start(k: int) -> None:
        try:
            procs.append(HostProcess(tmp_path / f"node{k}", url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        yield procs[0], procs[1]
    finally:
        for p in procs:
            p.stop()


def test_both_processes_serve_the_same_class_links(two_hosts):
    a, b = two_hosts
    assert a.base != b.base
    assert a.join_path == b.join_path and a.teach_path == b.teach_path


def test_a_save_on_one_process_reaches_the_instructor_on_the_other_within_2s(two_hosts):
    a, b = two_hosts
    teacher, ada = Browser(), Browser()
    try:
        assert teacher.get(b.base + b.teach_path).status_code == 200  # the key becomes a cookie
        teacher.read_token(b, "/teach")
        watch = EventLog(teacher, b.base + "/teach/api/events")
        ada.join(a, "Ada")
        own_page_on_b = EventLog(ada, b.base + "/api/events")
        code = solution_source("step1")
        t_ack = time.monotonic()
        saved = ada.post_json(a.base + "/api/step/step1/save", {"content": code, "base": None})
        assert saved.status_code == 200 and saved.json()["saved"] is True, saved.text
        version = saved.json()["version"]
        took = watch.wait_for(lambda n, d: n == "class" and d.get("step") == "step1", t_ack, 10)
        assert took is not None, f"no event on the other process: {watch.events}"
        assert took <= LIVE_BOUND, f"the instructor on the other process heard of it after {took:.2f} s"
        assert own_page_on_b.wait_for(lambda n, d: n == "file-changed" and d.get("version") == version,
                                      t_ack, LIVE_BOUND + 1) is not None
        # Either process serves the learner's latest file and the instructor's picture.
        step = ada.get(b.base + "/api/step/step1")
        assert step.status_code == 200
        assert step.json()["content"] == code and step.json()["version"] == version
        picture = teacher.get(b.base + "/teach/api/class")
        assert picture.status_code == 200 and "Ada" in picture.text
        watch.close()
        own_page_on_b.close()
    finally:
        teacher.close()
        ada.close()


def _save(browser: Browser, proc: HostProcess, text: str) -> Any:
    return browser.post_json(proc.base + "/api/step/step2/save", {"content": text, "base": None})


def test_database_restarted_mid_class_503_with_retry_after_then_recovery(two_hosts, cluster):
    a, b = two_hosts
    bo = Browser()
    try:
        bo.join(a, "Bo")
        first = _save(bo, a, "# before the outage\n")
        assert first.status_code == 200, first.text
        for p in (a, b):
            assert bo.get(p.base + "/readyz").status_code == 200
        cluster.stop("immediate")
        try:
            refused = _save(bo, a, "# during the outage\n")
            assert refused.status_code == 503, refused.text
            assert int(refused.headers["retry-after"]) >= 1
            assert "error" in refused.json()
            assert bo.get(b.base + "/api/step/step2").status_code == 503
            for p in (a, b):
                assert bo.get(p.base + "/readyz").status_code == 503
                assert bo.get(p.base + "/healthz").status_code == 200
        finally:
            cluster.start()
        acked = [first.json()["version"]]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the page retries as Retry-After says
            res = _save(bo, b, "# after the outage\n")
            if res.status_code == 200:
                acked.append(res.json()["version"])
                break
            assert res.status_code == 503, res.text
            time.sleep(0.2)
        assert len(acked) == 2, "the server did not recover by itself"
        for p in (a, b):
            ready_deadline = time.monotonic() + 15
            while bo.get(p.base + "/readyz").status_code != 200:
                assert time.monotonic() < ready_deadline, f"{p.base} never became ready again"
                time.sleep(0.2)
            history = bo.get(p.base + "/api/step/step2/versions")
            assert history.status_code == 200
            ids = [v["id"] for v in history.json()["versions"]]
            assert all(v in ids for v in acked), (acked, ids)
    finally:
        bo.close()


def test_ctrl_c_in_the_terminal_right_after_the_links_stops_cleanly(cluster, tmp_path):
    """On PostgreSQL too: Ctrl-C (to the whole group, workers still starting) ends the class
    with exit 0, no worker's traceback and nothing left running."""
    from test_host_support import HostProcess

    url = cluster.create_database(f"hosted_{next(_names)}")
    h = HostProcess(tmp_path / "class", "--db", url)
    out, err = h.ctrl_c()
    assert h.proc.returncode == 0, err
    assert "Stopped hosting" in err
    assert "Traceback" not in err and "Error" not in err, err
    assert h.group_alive() == []
