"""Bad input is a clear 4xx, never a 500, on SQLite and on PostgreSQL (issue 35, class 6).

Through the real server (`attn-practice host` on loopback, real HTTP): NUL
characters wherever a request can carry one (path ids, query, JSON fields,
form fields), lone surrogates, JSON nested 500,000 deep. The per-learner quota
counts UTF-8 bytes (4-byte text does not store four times the quota), and a
damaged `class.sqlite3` at start is named, with the ways back.
"""

from __future__ import annotations

import itertools
import subprocess

import pytest
from pg_cluster import cluster_or_skip
from test_host_support import HostProcess, console_script, hosted_class

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow
_names = itertools.count()

NUL_GETS = ["/api/version/%00", "/api/version/ab%00cd", "/api/step/step1%00/versions", "/api/step/%00",
            "/resume/%00", "/join/%00", "/teach/api/learner/%00", "/teach?key=%00", "/metrics?key=a%00",
            "/api/widget/scale?d_k=%00", "/api/widget/example?q=1%00", "/step/%00"]


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def host(request, tmp_path):
    extra: tuple[str, ...] = ()
    if request.param == "postgres":
        cluster = request.getfixturevalue("cluster")
        extra = ("--db", cluster.create_database(f"badinput_{next(_names)}"))
    proc = HostProcess(tmp_path / "class", *extra)
    try:
        yield proc
    finally:
        proc.stop()


def _no_500(r) -> None:
    assert r.status_code < 500, (r.request.url, r.status_code, r.text[:300])
    assert "Traceback" not in r.text and "bug" not in r.text.lower()


def test_nul_characters_anywhere_are_a_clear_400(host):
    learner, token, _ = host.join("Nul")
    teacher = host.client()
    assert teacher.get(f"/teach?key={host.key}").status_code == 303
    for client in (learner, teacher, host.client()):
        for path in NUL_GETS:
            r = client.get(path)
            _no_500(r)
            assert 400 <= r.status_code < 500
    headers = {"X-Attn-Token": token, "Content-Type": "application/json"}
    bodies = [("restore", '{"version": "a\\u0000b"}'), ("save", '{"content": "x", "base": "\\u0000"}'),
              ("save", '{"content": "a\\u0000b"}'), ("restore", '{"version": "\\ud800"}'),
              ("hint", '{"\\u0000": 1}'), ("save", '{"content": "x", "base": ["\\u0000"]}')]
    for action, body in bodies:
        r = learner.post(f"/api/step/step1/{action}", content=body.encode(), headers=headers)
        _no_500(r)
        assert r.status_code == 400, (action, body, r.text)
    r = learner.post("/api/step/st%00ep1/save", content=b'{"content": "x"}', headers=headers)
    _no_500(r)
    form = {"csrf": "x", "display_name": "A\x00B"}
    for path in (f"/join/{host.join_code}", "/teach/login", f"/join/{host.join_code}%00"):
        _no_500(host.client().post(path, data=form))
    # nothing was stored from any of it: the learner's step1 has no version
    assert learner.get("/api/step/step1/versions").json()["versions"] == []
    assert learner.get("/healthz").status_code == 200


def test_json_nested_half_a_million_deep_is_a_400(host):
    learner, token, _ = host.join("Deep")
    headers = {"X-Attn-Token": token, "Content-Type": "application/json"}
    deep = b'{"content": ' + b"[" * 500_000 + b"]" * 500_000 + b"}"
    r = learner.post("/api/step/step1/save", content=deep, headers=headers)
    _no_500(r)
    assert r.status_code == 400 and "nested" in r.json()["error"]
    deep_object = b'{"a":' * 200_000 + b"1" + b"}" * 200_000
    r = learner.post("/api/step/step2/save", content=deep_object, headers=headers)
    _no_500(r)
    assert r.status_code == 400
    assert learner.post("/api/step/step1/save", json={"content": "x = 1\n"},
                        headers={"X-Attn-Token": token}).status_code == 200


def test_the_quota_counts_bytes_not_characters(tmp_path):
    """4-byte characters fill the quota four times as fast as ASCII (in process: a small quota)."""
    with hosted_class(tmp_path / "q") as hosted:
        b = hosted.browser().join("Emoji")
        hosted.ctx.lesson.quota = 100_000
        text = "\U0001F600" * 10_000  # 10,000 characters, 40,000 bytes
        assert b.save("step5", text).status_code == 200
        assert b.save("step5", text + "!").status_code == 200  # 80,001 bytes stored
        r = b.save("step5", text + "!!")  # would be 120,003 bytes: over
        assert r.status_code == 400 and "limit" in r.json()["error"]
        assert hosted.ctx.store.learner_bytes(_only_learner(hosted)) == 80_001


def _only_learner(hosted) -> str:
    (learner,) = hosted.ctx.store.learners()
    return learner.id


def test_the_quota_counts_bytes_on_postgres(cluster, tmp_path):
    from attn_practice.grader.host.store.factory import open_store

    store = open_store(cluster.create_database(f"quota_{next(_names)}"), tmp_path)
    try:
        learner = store.create_learner("Emoji", "", "h" * 64)
        store.save_version(learner.id, "step1", "\U0001F600" * 1000 + "é")
        assert store.learner_bytes(learner.id) == 4002
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["garbage", "torn", "folder"])
def test_a_damaged_class_database_is_named_at_start(tmp_path, damage):
    data = tmp_path / "class"
    if damage == "torn":
        proc = HostProcess(data)
        c, _, _ = proc.join("Before")
        proc.stop()
        raw = (data / "class.sqlite3").read_bytes()
        (data / "class.sqlite3").write_bytes(raw[:100] + b"\xa5" * 8000 + raw[8100:])
        for extra in ("class.sqlite3-wal", "class.sqlite3-shm"):
            (data / extra).unlink(missing_ok=True)
    else:
        data.mkdir()
        if damage == "garbage":
            (data / "class.sqlite3").write_bytes(b"this is not a database\n" * 500)
        else:
            (data / "class.sqlite3").mkdir()
    out = subprocess.run([console_script(), "host", str(data), "--port", "0", "--jobs", "1"],
                         capture_output=True, text=True, timeout=120)
    said = out.stdout + out.stderr
    assert out.returncode != 0, said
    assert "Hosting attn-practice class" not in said
    assert str(data / "class.sqlite3") in said, said
    assert "host backup" in said and "DATA_DIR" in said, said
    assert "Traceback" not in said and "bug" not in said.lower() and "internal error" not in said.lower()
    if damage == "garbage":
        assert "not a SQLite database" in said
    for cmd in (["export", str(data)], ["set-password", str(data)]):
        again = subprocess.run([console_script(), "host", *cmd], capture_output=True, text=True,
                               timeout=120, input="0123456789ab\n0123456789ab\n")
        assert again.returncode != 0 and "Traceback" not in again.stderr, again.stderr
