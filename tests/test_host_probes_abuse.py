"""Probes: resource abuse by one learner or one address, grade integrity under races, durability.

Real server on loopback (SQLite and PostgreSQL for the races): hint and
write floods are slowed with a Retry-After while a classmate's save goes
through; a learner opens many event streams; bodies lie about their size,
nest deeply, are not UTF-8; twelve browsers race to claim one student id
under look-alike spellings (exactly one holds it, and the export never holds
two learners under one label); `kill -9` in the middle of a run of saves
loses none that was acknowledged.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import re
import signal
import socket
import subprocess

import pytest
from host_probes import Learner, instructor, running_host
from pg_cluster import cluster_or_skip
from test_host_support import HostProcess, console_script

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def host(request, tmp_path):
    extra: tuple[str, ...] = ()
    if request.param == "postgres":
        extra = ("--db", request.getfixturevalue("cluster").create_database(f"abuse_{next(_names)}"))
    with running_host(tmp_path / "class", *extra) as h:
        yield h


def test_hint_and_write_floods_are_slowed_and_a_classmate_is_not(host):
    flooder, classmate = Learner(host, "Flood"), Learner(host, "Mate")
    codes = [flooder.post("/api/step/step1/hint").status_code for _ in range(60)]
    assert 429 in codes and set(codes) <= {200, 429}, codes
    # the next refusal (on a busy machine a token may have come back meanwhile: one goes through)
    refused = next(r for r in (flooder.post("/api/step/step1/hint") for _ in range(60))
                   if r.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1
    assert "wait" in refused.json()["error"]
    assert classmate.save("step1", "x = 1\n").status_code == 200
    assert classmate.post("/api/step/step1/hint").status_code == 200


def test_one_learner_holds_a_few_event_streams_not_the_server(host):
    flooder = Learner(host, "Streams")
    cookie = "; ".join(f"{k}={v}" for k, v in flooder.client.cookies.items())
    socks, statuses = [], []
    try:
        for _ in range(12):
            s = socket.create_connection(("127.0.0.1", host.port), timeout=30)
            s.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n\r\n".encode())
            socks.append(s)
            statuses.append(int(s.recv(64).split(b" ")[1]))
        assert statuses.count(200) <= 5 and statuses.count(429) >= 7, statuses
        assert host.client().get("/healthz").status_code == 200
        assert Learner(host, "Other").client.get("/api/summary").status_code == 200
    finally:
        for s in socks:
            s.close()


def test_bodies_that_lie_nest_or_are_not_text_are_a_clear_4xx(host):
    b = Learner(host, "Bodies")
    path, h = "/api/step/step1/save", {"X-Attn-Token": b.token, "Content-Type": "application/json"}
    big = b'{"content": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    cases = [
        b.client.post(path, content=big, headers=h),
        b.client.post(path, content=(x for x in [big]), headers=h),  # chunked: no Content-Length
        b.client.post(path, content=b'{"content":' + b"[" * 200000 + b"]" * 200000 + b"}", headers=h),
        b.client.post(path, content=b'{"content": "\xff\xfe"}', headers=h),
        b.client.post(path, content=b'{"content": "\\ud800"}', headers=h),
        b.client.post(path, content=b'{"content": "a\\u0000b"}', headers=h),
        b.client.post(path, content=b'["content"]', headers=h),
        b.client.post(path, content=b'{"content": 5}', headers=h),
        b.client.post(path, content=b'{"content": "' + "\U0001F600".encode() * 600000 + b'"}', headers=h),
    ]
    for r in cases:
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:200])
        assert "Traceback" not in r.text
    assert b.client.get("/api/step/step1/versions").json()["versions"] == []


SPELLINGS = ["s-100", "S-100", " s-100 ", "s\u2010100", "\u0455-100", "s-\uff11\uff10\uff10", "s-100\u200b",
             "s\u2011100", "S-100", "s-100", "s-100", "s-100"]


def test_one_student_id_is_held_once_whatever_the_race_or_spelling(host):
    def join(i_sid):
        i, sid = i_sid
        return Learner(host, f"Racer {i}", student_id=sid)

    with concurrent.futures.ThreadPoolExecutor(len(SPELLINGS)) as pool:
        racers = list(pool.map(join, enumerate(SPELLINGS)))
    got_in = [r for r in racers if r.joined.status_code == 200 and r.resume_link]
    refused = [r for r in racers if r.joined.status_code == 409]
    assert len(got_in) == 1 and len(refused) == len(SPELLINGS) - 1, \
        [r.joined.status_code for r in racers]
    holder = re.search(r"Racer \d+", got_in[0].joined.text)
    assert holder is not None
    assert all(holder.group(0) + "<" not in r.joined.text for r in refused)  # never says who holds it
    teacher, _ = instructor(host)
    records = json.loads(teacher.get("/teach/export.json").text)
    labels = [r["submission"] for r in records]
    assert len(labels) == len(set(labels)) == 1, labels
    conflicts = teacher.get("/teach/api/class").json()["id_conflicts"]
    assert conflicts, "the refused claims are kept for the instructor"


def test_kill_9_mid_saves_loses_nothing_acknowledged(tmp_path):
    folder = tmp_path / "class"
    host = HostProcess(folder)
    acknowledged: list[tuple[str, str]] = []
    try:
        ada = Learner(host, "Ada")
        stop = False

        def saver() -> None:
            for i in itertools.count():
                if stop:
                    return
                text = f"# version {i}\nx = {i}\n"
                try:
                    r = ada.save("step1", text)
                except Exception:  # noqa: BLE001 - the server died under this request
                    return
                if r.status_code == 200:
                    acknowledged.append((r.json()["version"], text))

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            running = pool.submit(saver)
            while len(acknowledged) < 15:
                assert not running.done()
            host.kill9()
            stop = True
            running.result(timeout=120)
    finally:
        if host.proc.poll() is None:
            host.stop(signal.SIGKILL)
    again = HostProcess(folder, port=host.port)
    try:
        ada.client = again.client()  # a fresh browser: the learner comes back by their resume link
        from test_host_support import resume

        resume(ada.client, ada.resume_link.replace(host.base, ""))
        for vid, text in acknowledged:
            r = ada.client.get(f"/api/version/{vid}")
            assert r.status_code == 200 and r.json()["content"] == text, vid
    finally:
        again.stop()
    assert subprocess.run([console_script(), "host", "export", str(folder), "--format", "json"],
                          capture_output=True, text=True, timeout=300).returncode == 0
