"""Probes: CSRF and login CSRF on every POST, session fixation, cookie flags (real server, real HTTP).

A hostile page can make the victim's browser send the victim's cookies with
a POST, but not read our pages, set our header or know our tokens: so every
state change is tried here with the victim's cookies and (a) no token,
(b) another browser's token, (c) the right token but `Origin` of another site,
(d) `Sec-Fetch-Site: cross-site`. Sign-ins (join, resume confirm, instructor
login) are tried as login CSRF: a form the attacker filled in, posted from
their site. A cookie planted before sign-in is never adopted (fixation).
"""

from __future__ import annotations

import re

import pytest
from host_probes import Learner, instructor, page_token, running_host, teach_post

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow

LEARNER_ACTIONS = ["save", "check", "hint", "reset", "restore"]
TEACH_ACTIONS = ["rotate-join", "joining", "reissue", "settle-id", "student-id", "sign-out-everywhere"]
FOREIGN = [{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
           {"Sec-Fetch-Site": "same-site"}, {"Origin": "http://127.0.0.1.evil.example"}]


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    with running_host(tmp_path_factory.mktemp("csrf") / "class") as h:
        yield h


def _versions(learner: Learner) -> list:
    return learner.client.get("/api/step/step1/versions").json()["versions"]


def test_no_learner_write_goes_through_without_the_token_or_from_another_site(host):
    victim, other = Learner(host, "Victim"), Learner(host, "Other")
    body = {"content": "pwned = 1\n", "base": None, "version": "x"}
    for action in LEARNER_ACTIONS:
        path = f"/api/step/step1/{action}"
        no_token = victim.client.post(path, json=body)
        assert no_token.status_code == 403, (action, no_token.text)
        for token in ("", other.token, victim.token[:-1], victim.token.upper()):
            r = victim.post(path, body, **{"X-Attn-Token": token})
            assert r.status_code == 403, (action, token[:6])
        for headers in FOREIGN:
            r = victim.post(path, body, **headers)
            assert r.status_code == 403, (action, headers)
        # a cross-site HTML form can only send these content types
        for ctype in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data"):
            r = victim.client.post(path, content=b"content=pwned", headers={"Content-Type": ctype})
            assert r.status_code in (403, 415), (action, ctype)
    assert _versions(victim) == []  # nothing was written


def test_sign_out_needs_the_page_token(host):
    victim = Learner(host, "Stays")
    for form in ({}, {"csrf": ""}, {"csrf": "x"}):
        r = victim.client.post("/signout", data=form)
        assert r.status_code in (403, 415)
    r = victim.client.post("/signout", data={"csrf": victim.token}, headers=FOREIGN[0])
    assert r.status_code == 403
    assert victim.client.get("/api/summary").status_code == 200  # still signed in
    r = victim.client.post("/signout", data={"csrf": victim.token})
    assert r.status_code == 200 and victim.client.get("/api/summary").status_code == 401


def test_the_instructor_actions_need_the_page_token_and_our_origin(host):
    teacher, token = instructor(host)
    code_before = teacher.get("/teach/api/class").json()["join"]["link"]
    learner = Learner(host, "Someone")
    for action in TEACH_ACTIONS:
        body = {"open": False, "learner": "x", "student_id": "1"}
        assert teacher.post(f"/teach/api/{action}", json=body).status_code == 403, action
        assert teach_post(teacher, learner.token, action, body).status_code == 403, action
        for headers in FOREIGN:
            assert teach_post(teacher, token, action, body, **headers).status_code == 403, (action, headers)
    r = teacher.post("/teach/logout", data={"csrf": "x"})
    assert r.status_code == 403
    after = teacher.get("/teach/api/class")
    assert after.status_code == 200 and after.json()["join"]["link"] == code_before
    assert after.json()["join"]["open"] is True


def test_login_csrf_a_form_filled_in_elsewhere_signs_no_one_in(host):
    attacker = Learner(host, "Attacker")
    secret = attacker.resume_link.rsplit("/", 1)[1]
    victim = host.client()  # a fresh browser: no cookie of ours at all
    # the attacker's own form values (their csrf, their cookie) posted from their site
    page = attacker.client.get(f"/join/{host.join_code}")
    their_csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    tries = [
        (f"/join/{host.join_code}", {"csrf": their_csrf, "display_name": "Planted"}),
        (f"/resume/{secret}", {"csrf": their_csrf}),
        ("/teach/login", {"csrf": their_csrf, "key": host.key}),
        ("/teach/login", {"csrf": their_csrf, "password": "x"}),
    ]
    for path, form in tries:
        for headers in ({}, *FOREIGN):
            r = victim.post(path, data=form, headers=headers)
            assert r.status_code in (403, 429), (path, headers, r.status_code)
            assert "attnp_learner" not in r.headers.get("set-cookie", "")
            assert "attnp_teach" not in r.headers.get("set-cookie", "")
    assert victim.get("/api/summary").status_code == 401
    # a GET of the attacker's resume link (an <img> or a top-level navigation) only asks
    r = victim.get(f"/resume/{secret}", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 200 and "Continue as" in r.text
    assert "attnp_learner" not in r.headers.get("set-cookie", "")
    assert victim.get("/api/summary").status_code == 401


def test_a_signed_in_browser_is_never_switched_by_a_link(host):
    victim, attacker = Learner(host, "Victim"), Learner(host, "Attacker")
    r = victim.client.get(attacker.resume_link.replace(host.base, ""))
    assert r.status_code == 200 and "Victim" in r.text  # says whose browser this is
    assert "attnp_learner" not in r.headers.get("set-cookie", "")
    assert victim.client.get("/api/summary").status_code == 200
    assert victim.save("step1", "mine = 1\n").status_code == 200  # still the victim's workspace
    assert len(_versions(victim)) == 1 and _versions(attacker) == []


def test_a_planted_session_cookie_is_never_adopted(host):
    planted = "A" * 43
    browser = host.client()
    browser.cookies.set("attnp_learner", planted)
    page = browser.get(f"/join/{host.join_code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = browser.post(f"/join/{host.join_code}", data={"csrf": csrf, "display_name": "Fixed"})
    assert r.status_code == 200
    issued = re.search(r"attnp_learner=([^;]+)", r.headers["set-cookie"]).group(1)
    assert issued and issued != planted
    other = host.client()
    other.cookies.set("attnp_learner", planted)
    assert other.get("/api/summary").status_code == 401  # the planted value names no one


def test_every_session_cookie_is_httponly_and_samesite(host):
    fresh = host.client()
    page = fresh.get(f"/join/{host.join_code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    joined = fresh.post(f"/join/{host.join_code}", data={"csrf": csrf, "display_name": "Flags"})
    teacher = host.client()
    signed = teacher.get(f"/teach?key={host.key}")
    for response in (page, joined, signed):
        for line in response.headers.get_list("set-cookie"):
            low = line.lower()
            assert "httponly" in low and "samesite=lax" in low, line
    assert page_token(fresh.get("/").text) not in fresh.cookies.values()  # the token is not the cookie
    assert "frame-ancestors 'none'" in joined.headers["content-security-policy"] \
        or joined.headers.get("x-frame-options") == "DENY"
