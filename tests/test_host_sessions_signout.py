"""A learner signs out on a shared lab computer: the browser and the server both forget them.

Real Chromium on a real class: the lesson page has a "Sign out" button; after
it the page is the landing page, the cookie the browser had no longer opens
anything even when replayed (the session ended on the server, not only in the
browser), and the resume link brings the learner back (asking first). A
sign-out another site's page tries (a forged form POST) is refused.
"""

from __future__ import annotations

import re

import pytest
from browser import browser
from test_host_support import HostProcess, resume

httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow


def _ready(d) -> bool:
    return d.execute_script("return document.body.dataset.ready") == "true"


def test_sign_out_on_the_lesson_page_ends_the_session_everywhere(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        with browser(1200, 900) as b:
            b.get(f"{h.base}/join/{h.join_code}")
            b.find_element("id", "display_name").send_keys("Lab seat 4")
            b.find_element("css selector", "button[type=submit]").click()
            b.wait_for(lambda d: d.find_elements("id", "resume-link"), message="no resume link")
            link = b.find_element("id", "resume-link").text
            b.find_element("id", "start").click()
            b.wait_for(_ready, message="the lesson page never became ready")
            cookie = b.get_cookie("attnp_learner")["value"]
            replay = h.client()
            replay.cookies.set("attnp_learner", cookie)
            assert replay.get("/api/summary").status_code == 200

            b.find_element("id", "sign-out").click()
            b.wait_for(lambda d: "You are signed out" in d.page_source, message="no signed-out page")
            assert "resume link" in b.page_source
            assert b.get_cookie("attnp_learner") is None
            b.get(h.base + "/")
            assert "join link" in b.page_source and not b.find_elements("id", "code")
            assert replay.get("/api/summary").status_code == 401  # ended on the server too

            b.get(link)  # the way back: asked, then signed in anew
            b.find_element("id", "continue").click()
            b.wait_for(_ready, message="the resume link did not bring the lesson back")
            assert b.get_cookie("attnp_learner")["value"] != cookie  # a new session, not the old one
    finally:
        h.stop()


def test_a_sign_out_from_elsewhere_is_refused(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, token, _ = h.join("Ann")
        for headers, form in [({}, {"csrf": ""}), ({}, {"csrf": "guessed"}),
                              ({"Sec-Fetch-Site": "cross-site"}, {"csrf": token}),
                              ({"Origin": "http://localhost:1"}, {"csrf": token})]:
            assert c.post("/signout", data=form, headers=headers).status_code == 403
            assert c.get("/api/summary").status_code == 200
        nobody = h.client()
        assert nobody.post("/signout", data={"csrf": token}).status_code == 403
        r = c.post("/signout", data={"csrf": token})
        assert r.status_code == 200 and "signed out" in r.text
        assert c.get("/api/summary").status_code == 401
        assert 'name="attnp-token"' not in c.get("/").text
        page = c.get("/")
        assert re.search(r"join link", page.text)
    finally:
        h.stop()


def test_a_reissued_link_signs_out_whoever_had_the_old_one(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, _, link = h.join("Ben")
        other = h.client()
        assert resume(other, link.replace(h.base, "")).status_code == 303
        t = h.client()
        assert t.get(f"/teach?key={h.key}").status_code == 303
        token = re.search(r'name="attnp-token" content="([^"]+)"', t.get("/teach").text).group(1)
        lid = t.get("/teach/api/class").json()["grid"][0]["learner"]
        new = t.post("/teach/api/reissue", json={"learner": lid}, headers={"X-Attn-Token": token})
        assert new.status_code == 200
        assert c.get("/api/summary").status_code == 401 and other.get("/api/summary").status_code == 401
        assert resume(h.client(), new.json()["resume_link"].replace(h.base, "")).status_code == 303
    finally:
        h.stop()
