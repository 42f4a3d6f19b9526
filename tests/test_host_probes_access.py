"""Probes: cross-learner access and the instructor surface, as an attacking learner and an outsider.

Through the real console script on loopback (SQLite and PostgreSQL): a
learner names another learner's version ids, step names with path tricks,
encoded NULs, overlong and SQL-looking ids, on every /api route; an outsider
and a learner try every /teach route and action; an instructor browser whose
key was rotated (`host rotate-key` while the class runs) is signed out and
the old key opens nothing. Every probe must answer 4xx without a byte of the
other learner's work, and no 500.
"""

from __future__ import annotations

import itertools
import subprocess

import pytest
from host_probes import Learner, instructor, running_host, teach_post
from pg_cluster import cluster_or_skip
from test_host_support import console_script

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow
_names = itertools.count()

SECRET = "ADA_PRIVATE_MARKER_7f3a"
TEACH_ACTIONS = ["rotate-join", "joining", "reissue", "settle-id", "student-id", "sign-out-everywhere",
                 "roster", "nope"]


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def host(request, tmp_path):
    extra: tuple[str, ...] = ()
    if request.param == "postgres":
        extra = ("--db", request.getfixturevalue("cluster").create_database(f"probe_{next(_names)}"))
    with running_host(tmp_path / "class", *extra) as h:
        yield h


def _clean(r, *, marker: str = SECRET) -> None:
    assert r.status_code < 500, (r.request.url, r.status_code, r.text[:300])
    assert marker not in r.text, (r.request.url, "another learner's work leaked")


def test_a_learner_reaches_nothing_of_another_learner(host):
    ada, eve = Learner(host, "Ada"), Learner(host, "Eve")
    saved = ada.save("step1", f"# {SECRET}\ndef scores(q, k):\n    return q @ k.T\n")
    assert saved.status_code == 200, saved.text
    vid = saved.json()["version"]
    tricks = [vid, vid.upper(), vid + "%00", "..%2F" + vid, "%2e%2e%2f" + vid, vid * 40,
              "' OR '1'='1", "%27%20OR%201%3D1%20--", "*", "%25", vid + "%20"]
    for t in tricks:
        _clean(eve.client.get(f"/api/version/{t}"))
    for step in ["step1", "..%2Fstep1", "step1%2F..", "STEP1", "step1%00", "step01", "step1 ", "s" * 5000]:
        for path in [f"/api/step/{step}", f"/api/step/{step}/versions"]:
            r = eve.client.get(path)
            _clean(r)
    for query in [f"?learner={vid}", f"?version={vid}", f"?id={vid}"]:
        _clean(eve.client.get(f"/api/step/step1/versions{query}"))
        _clean(eve.client.get(f"/api/widget/heatmap{query}&step=step1"))
    # writes naming Ada's version: refused or done on Eve's own work only
    r = eve.post("/api/step/step1/restore", {"version": vid})
    assert r.status_code == 404, r.text
    _clean(eve.save("step1", "x = 1\n", base=vid))
    _clean(eve.post("/api/step/step1/save", {"content": "x = 1\n", "learner": "x", "base": None}))
    assert eve.post("/api/step/step1/save", {"content": "y = 2\n"}, **{"X-Attn-Token": ada.token}
                    ).status_code == 403  # another learner's page token is not Eve's
    # Ada's work is untouched and hers alone
    mine = ada.client.get(f"/api/version/{vid}")
    assert mine.status_code == 200 and SECRET in mine.json()["content"]
    assert [v["id"] for v in ada.client.get("/api/step/step1/versions").json()["versions"]] == [vid]
    for path in ["/api/summary", "/api/step/step1", "/api/queue", "/"]:
        _clean(eve.client.get(path))
        assert "Ada" not in eve.client.get("/api/summary").text


def test_another_learners_resume_link_is_not_guessable_and_cookies_are_not_swappable(host):
    ada, eve = Learner(host, "Ada"), Learner(host, "Eve")
    secret = ada.resume_link.rsplit("/", 1)[1]
    for near in [secret[:-1], secret[:-1] + ("A" if secret[-1] != "A" else "B"), secret.upper(),
                 secret + "%00", secret[:-1] + "/", "%2e%2e", "x" * 5000]:
        r = eve.client.get(f"/resume/{near}")
        assert r.status_code in (307, 400, 404, 405, 429), (near[:20], r.status_code)
        assert "attnp_learner" not in r.headers.get("set-cookie", "")
        assert "Ada" not in r.text
    # a forged learner cookie (Ada's page token, a cookie-looking value) names no one
    forged = host.client()
    for value in [ada.token, secret[:-1], "x" * 300, '"; attnp_learner=1']:
        forged.cookies.set("attnp_learner", value)
        assert forged.get("/api/summary").status_code == 401


def test_the_instructor_surface_is_closed_to_outsiders_and_learners(host):
    eve = Learner(host, "Eve")
    outsider = host.client()
    gets = ["/teach/api/class", "/teach/api/events", "/teach/api/learner/x", "/teach/export.json",
            "/teach/export.csv", "/metrics", f"/teach/export.json?key={host.key}",
            f"/metrics?key={host.key[:-1]}", "/teach/api/lti", "/teach/api/roster"]
    for client in (outsider, eve.client):
        for path in gets:
            r = client.get(path)
            assert r.status_code in (401, 403, 404, 405), (path, r.status_code)
            assert "Eve" not in r.text and "learners" not in r.text
    for action in TEACH_ACTIONS:
        r = eve.post(f"/teach/api/{action}", {"learner": "x", "open": True})
        assert r.status_code in (401, 403, 404), (action, r.status_code)
    # a learner cookie copied into the instructor cookie is no instructor
    swapped = host.client()
    swapped.cookies.set("attnp_teach", eve.client.cookies["attnp_learner"])
    assert swapped.get("/teach/api/class").status_code == 403
    for key in [host.key[:-1], host.key.upper(), host.key + "x", "", "%00", host.key[:20]]:
        r = outsider.get(f"/teach?key={key}")
        assert r.status_code in (400, 403, 429) and "attnp_teach" not in r.headers.get("set-cookie", "")


def test_a_rotated_key_signs_out_every_instructor_browser_and_opens_nothing(host):
    import time

    teacher, token = instructor(host)
    assert teacher.get("/teach/api/class").status_code == 200
    attacker = host.client()
    assert attacker.get(f"/teach?key={host.key}").status_code == 303  # the server's keys are fresh
    done = subprocess.run([console_script(), "host", "rotate-key", str(host.data_dir)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # at once (the server caches its keys for a moment): the old key opens nothing
    for _ in range(3):
        r = host.client().get(f"/teach?key={host.key}")
        assert r.status_code == 403 and "attnp_teach" not in r.headers.get("set-cookie", "")
    for browser in (teacher, attacker):
        assert browser.get("/teach/api/class").status_code == 403
    assert teach_post(teacher, token, "rotate-join").status_code == 403
    new_key = done.stdout.split("New instructor key:", 1)[1].split()[0]
    fresh = host.client()
    deadline = time.monotonic() + 30  # the new key opens within the cache's moment
    while (code := fresh.get(f"/teach?key={new_key}").status_code) != 303:
        assert code == 403 and time.monotonic() < deadline, code
        time.sleep(0.5)
    assert fresh.get("/teach/api/class").status_code == 200


def test_sign_out_everywhere_ends_every_instructor_session_but_no_learners(host):
    one, token = instructor(host)
    two, _ = instructor(host)
    ada = Learner(host, "Ada")
    r = teach_post(one, token, "sign-out-everywhere")
    assert r.status_code == 200, r.text
    assert one.get("/teach/api/class").status_code == 403
    assert two.get("/teach/api/class").status_code == 403
    assert ada.client.get("/api/summary").status_code == 200


def test_a_learners_event_stream_carries_nothing_of_a_classmate(host):
    import threading

    import httpx

    ada = Learner(host, "Ada")
    heard: list[str] = []
    opened: list[httpx.Response] = []

    def listen() -> None:
        try:
            with ada.client.stream("GET", "/api/events", timeout=httpx.Timeout(30, read=300)) as r:
                opened.append(r)
                for chunk in r.iter_text():
                    heard.append(chunk)
        except (httpx.HTTPError, RuntimeError, ValueError):  # closed from the test's thread
            pass

    listening = threading.Thread(target=listen)
    listening.start()
    bob = Learner(host, "Bob Classmate")
    saved = bob.save("step1", f"# {SECRET}\ndef dot_scores(Q, K):\n    return Q @ K.T\n")
    assert saved.status_code == 200
    assert bob.post("/api/step/step1/check").status_code == 200
    assert bob.post("/api/step/step1/hint").status_code == 200
    import time

    time.sleep(3)  # what the live hub would have sent has arrived
    opened[0].close()
    listening.join(60)
    text = "".join(heard)
    assert "connected" in text  # the stream was open all along
    for leak in ("Bob", SECRET, saved.json()["version"]):
        assert leak not in text, leak


def test_a_session_opened_with_the_old_key_while_it_is_rotated_does_not_survive(host):
    """An attacker with a leaked key keeps using it while the instructor rotates it: no session
    made with it in any moment around the rotation outlives the rotation."""
    import threading
    import time

    sessions: list[str] = []
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            r = host.client().get(f"/teach?key={host.key}")
            if r.status_code == 303:
                sessions.append(r.cookies["attnp_teach"])
            time.sleep(0.1)

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        done = subprocess.run([console_script(), "host", "rotate-key", str(host.data_dir)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        time.sleep(3)
    finally:
        stop.set()
        thread.join(60)
    assert sessions, "the old key never opened: the probe did not run"
    alive = []
    for cookie in sessions:
        c = host.client()
        c.cookies.set("attnp_teach", cookie)
        if c.get("/teach/api/class").status_code == 200:
            alive.append(cookie)
    assert alive == [], f"{len(alive)} of {len(sessions)} sessions opened with the old key survive"
