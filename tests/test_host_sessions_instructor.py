"""Instructor sessions are real sessions: one per sign-in, ended by the instructor or by the CLI.

Through the installed console script on loopback (and Chromium for the
page's "Sign out everywhere" button): every sign-in gets its own random
cookie, stored only as a hash; the page's token belongs to its session;
"Sign out" ends one browser, "Sign out everywhere" all of them;
`host set-password` and `host rotate-key` (run while the class is served)
end every instructor session, and rotate-key retires the old key.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import time

import pytest
from browser import browser
from test_host_support import HostProcess, console_script

httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow

PATIENCE = 60.0  # seconds to wait for what a running class picks up from its store (a settings cache)


def sign_in(h: HostProcess, key: str | None = None) -> tuple[httpx.Client, str]:
    c = h.client()
    r = c.get(f"/teach?key={key or h.key}")
    assert r.status_code == 303, r.text
    token = re.search(r'name="attnp-token" content="([^"]+)"', c.get("/teach").text).group(1)
    return c, token


def signed_in(c: httpx.Client) -> bool:
    return c.get("/teach/api/class").status_code == 200


def cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), "host", *args], capture_output=True, text=True,
                          input=input, timeout=300)


def test_each_sign_in_is_its_own_session_stored_as_a_hash(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        a, token_a = sign_in(h)
        b, token_b = sign_in(h)
        cookie_a, cookie_b = a.cookies["attnp_teach"], b.cookies["attnp_teach"]
        assert cookie_a != cookie_b and token_a != token_b
        with sqlite3.connect(f"file:{tmp_path / 'class' / 'class.sqlite3'}?mode=ro", uri=True) as db:
            stored = [r[0] for r in db.execute("SELECT token_hash FROM sessions WHERE kind = 'instructor'")]
        assert len(stored) == 2 and cookie_a not in stored and cookie_b not in stored
        # a page's token works with its own session only
        assert a.post("/teach/api/rotate-join", json={}, headers={"X-Attn-Token": token_b}).status_code == 403
        assert a.post("/teach/api/rotate-join", json={}, headers={"X-Attn-Token": token_a}).status_code == 200
        # signing out one browser leaves the other signed in
        assert a.post("/teach/logout", data={"csrf": token_b}).status_code == 403
        r = a.post("/teach/logout", data={"csrf": token_a})
        assert r.status_code == 200 and "Signed out" in r.text
        assert not signed_in(a) and signed_in(b)
        replay = h.client()
        replay.cookies.set("attnp_teach", cookie_a)
        assert not signed_in(replay)  # ended on the server, not only in that browser
        # sign out everywhere needs the page's token and our origin
        assert b.post("/teach/api/sign-out-everywhere", json={}).status_code == 403
        assert b.post("/teach/api/sign-out-everywhere", json={},
                      headers={"X-Attn-Token": token_b, "Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert signed_in(b)
    finally:
        h.stop()


def test_sign_out_everywhere_from_the_page_ends_every_instructor_browser(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        other, _ = sign_in(h)
        with browser(1280, 900) as teach:
            teach.get(f"{h.base}/teach?key={h.key}")
            teach.wait_for(lambda d: d.find_elements("id", "sign-out-everywhere"), message="no button")
            teach.find_element("id", "sign-out-everywhere").click()
            teach.wait_for(lambda d: d.find_elements("id", "password") or "instructor link" in d.page_source
                           and not d.find_elements("id", "sign-out-everywhere"),
                           message="the page did not fall back to signing in")
            assert not signed_in(other)
            teach.get(f"{h.base}/teach/api/class")
            assert "instructor" in teach.find_element("tag name", "body").text.lower()
            assert '"learners"' not in teach.page_source
    finally:
        h.stop()


def test_set_password_and_rotate_key_end_every_instructor_session(tmp_path):
    data = tmp_path / "class"
    h = HostProcess(data)
    try:
        a, _ = sign_in(h)
        r = cli("set-password", str(data), input="correct horse battery\ncorrect horse battery\n")
        assert r.returncode == 0, r.stderr
        assert not signed_in(a)
        b, _ = sign_in(h)  # the key still opens the page
        p = h.client()
        page = p.get("/teach")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        assert p.post("/teach/login", data={"csrf": csrf, "password": "correct horse battery"}).status_code == 303
        assert signed_in(p)

        r = cli("rotate-key", str(data))
        assert r.returncode == 0, r.stderr
        new_key = re.search(r"New instructor key: (\S+)", r.stdout).group(1)
        assert new_key != h.key and len(new_key) >= 40
        assert not signed_in(b) and not signed_in(p)
        deadline = time.monotonic() + PATIENCE
        while h.client().get(f"/teach?key={h.key}").status_code != 403:  # the old key is retired
            assert time.monotonic() < deadline, "the old key still opened the page"
            time.sleep(0.5)
        c, _ = sign_in(h, new_key)
        assert signed_in(c)
    finally:
        h.stop()
    again = HostProcess(data)  # the class prints its current key on the next start
    try:
        assert again.key == new_key
    finally:
        again.stop()
    r = cli("rotate-key", str(tmp_path / "nowhere"))
    assert r.returncode != 0 and "Traceback" not in r.stderr


def test_sessions_hold_across_two_processes_of_one_postgresql_class(tmp_path):
    """Behind a balancer: a sign-in on one process is the same session on the other, and ends on both."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
    from pg_cluster import cluster_or_skip

    with cluster_or_skip() as pg:
        url = pg.create_database("sessions")
        a = HostProcess(tmp_path / "a", "--db", url)
        try:
            b = HostProcess(tmp_path / "b", "--db", url)
            try:
                c, token = sign_in(a)
                on_b = b.client()
                on_b.cookies.set("attnp_teach", c.cookies["attnp_teach"])
                assert signed_in(on_b)
                learner, _, link = b.join("Across")
                assert learner.get("/api/summary").status_code == 200
                moved = a.client()
                moved.cookies.set("attnp_learner", learner.cookies["attnp_learner"])
                assert moved.get("/api/summary").json()["learner"] == "Across"
                r = on_b.post("/teach/api/sign-out-everywhere", json={}, headers={"X-Attn-Token": token})
                assert r.status_code == 200
                assert not signed_in(c) and not signed_in(on_b)
                assert moved.post("/signout", data={"csrf": re.search(
                    r'name="attnp-token" content="([^"]+)"', moved.get("/").text).group(1)}).status_code == 200
                assert learner.get("/api/summary").status_code == 401  # ended on the other process too
            finally:
                b.stop()
        finally:
            a.stop()
