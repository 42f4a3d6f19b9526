"""LTI 1.3 at the HTTP level (CONTRACT §8): the real `attn-practice host` and a loopback platform.

Each browser is an httpx client with its own cookies, walking the launch as
a browser does (login -> platform auth -> form post to the launch). What the
Chromium tests show for people, these show for every rule: each refused
launch, the clock skew allowed, registrations taking effect in a running
class (a second platform, an added deployment), a token audience that is
not the token URL, the tool's key rotated and still trusted, a line item the
tool creates, and the private key never served or logged.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from lti_platform import USERS, Platform, platform_fixture  # noqa: F401 - the `platform` fixture
from serve_helpers import wait_until
from test_host_support import HostProcess, console_script

from attn_practice.grader.host.lti.platform_keys import MIN_REFRESH

pytestmark = pytest.mark.slow

FIELD = re.compile(r'name="([^"]+)" value="([^"]*)"')


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), "host", "lti", *args], capture_output=True, text=True, timeout=120)


def launch(h: HostProcess, p: Platform, user: str, mode: str = "ok",
           client: httpx.Client | None = None) -> httpx.Response:
    """One launch, as a browser would walk it; returns the tool's answer to the launch post."""
    c = client or httpx.Client(timeout=60)
    login = c.post(f"{h.base}/lti/login", data={
        "iss": p.issuer, "login_hint": user, "target_link_uri": f"{h.base}/lti/launch",
        "lti_message_hint": mode, "client_id": p.client_id, "lti_deployment_id": p.deployment_id})
    assert login.status_code == 302, login.text
    auth = c.get(login.headers["location"])
    assert auth.status_code == 200, auth.text
    fields = {k: html.unescape(v) for k, v in FIELD.findall(auth.text)}
    return c.post(f"{h.base}/lti/launch", data=fields,
                  headers={"Origin": p.base, "Sec-Fetch-Site": "cross-site"})  # as a browser says it


def signed_in(h: HostProcess, c: httpx.Client) -> bool:
    return c.get(f"{h.base}/api/summary").status_code == 200


@pytest.fixture
def tool(tmp_path, platform):
    data = tmp_path / "class"
    done = cli("register", str(data), *platform.register_args())
    assert done.returncode == 0, done.stderr
    h = HostProcess(data)
    platform.tool_base = h.base
    assert cli("config", str(data), "--url", h.base).returncode == 0
    try:
        yield h, data
    finally:
        h.stop()


REFUSED = [("other_key", "signature does not verify"), ("expired", "expired"),
           ("wrong_aud", "audience"), ("unknown_deployment", "not registered"),
           ("no_sub", "no user"), ("wrong_type", "LtiResourceLinkRequest"), ("wrong_version", "1.3.0"),
           ("wrong_azp", "authorized party"), ("future", "future")]


def test_each_refused_launch_says_why_and_signs_no_one_in(tool, platform):
    h, _ = tool
    ok = httpx.Client(timeout=60)
    assert launch(h, platform, "ann", client=ok).status_code == 200 and signed_in(h, ok)
    for mode, words in REFUSED + [("replay_nonce", "already used once")]:
        c = httpx.Client(timeout=60)
        got = launch(h, platform, "eve", mode, client=c)
        assert got.status_code == 403 and words in html.unescape(got.text), (mode, got.text[-400:])
        assert "Traceback" not in got.text
        assert not signed_in(h, c), mode
        assert "attnp_learner" not in c.cookies and "attnp_teach" not in c.cookies, mode
    # a launch's form posted from another browser; then by its own browser (fine), then again (replayed)
    own, other = httpx.Client(timeout=60), httpx.Client(timeout=60)
    login = own.get(f"{h.base}/lti/login", params={"iss": platform.issuer, "login_hint": "eve",
                                                   "target_link_uri": f"{h.base}/lti/launch",
                                                   "lti_message_hint": "hold"})
    fields = {k: html.unescape(v) for k, v in FIELD.findall(own.get(login.headers["location"]).text)}
    got = other.post(f"{h.base}/lti/launch", data=fields)
    assert got.status_code == 403 and "does not belong to this browser" in got.text
    assert not signed_in(h, other)
    assert own.post(f"{h.base}/lti/launch", data=fields).status_code == 200 and signed_in(h, own)
    again = own.post(f"{h.base}/lti/launch", data=fields)
    assert again.status_code == 403 and "already used once" in again.text
    got = other.post(f"{h.base}/lti/launch", data=fields)
    assert got.status_code == 403 and "already used once" in got.text
    c = httpx.Client(timeout=60)
    got = c.post(f"{h.base}/lti/launch", data={"id_token": "x.y.z", "state": "not-from-here"})
    assert got.status_code == 403 and "not a JWT" in got.text
    got = c.post(f"{h.base}/lti/launch", data={"state": "s", "error": "login_required",
                                               "error_description": "Sign in to the LMS first"})
    assert got.status_code == 403 and "login_required" in got.text and "Sign in to the LMS first" in got.text
    got = c.post(f"{h.base}/lti/launch", data={"state": "s"})
    assert got.status_code == 403 and "no id_token" in got.text
    # an unknown issuer cannot even start a login
    got = c.get(f"{h.base}/lti/login", params={"iss": "https://lms.evil.example", "login_hint": "x",
                                               "target_link_uri": f"{h.base}/lti/launch"})
    assert got.status_code == 400 and "not registered" in html.unescape(got.text)


def test_the_login_redirect_and_the_state_cookie(tool, platform):
    h, _ = tool
    c = httpx.Client(timeout=60)
    got = c.get(f"{h.base}/lti/login", params={"iss": platform.issuer, "login_hint": "ann",
                                               "target_link_uri": f"{h.base}/lti/launch",
                                               "lti_message_hint": "ok"})
    assert got.status_code == 302
    url = httpx.URL(got.headers["location"])
    q = dict(url.params)
    assert str(url).startswith(platform.auth_url)
    assert {k: q[k] for k in ("scope", "response_type", "response_mode", "prompt", "client_id",
                              "redirect_uri", "login_hint", "lti_message_hint")} == {
        "scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
        "client_id": platform.client_id, "redirect_uri": f"{h.base}/lti/launch", "login_hint": "ann",
        "lti_message_hint": "ok"}
    assert len(q["state"]) >= 32 and len(q["nonce"]) >= 32 and q["state"] != q["nonce"]
    cookies = got.headers.get_list("set-cookie")
    none = [x for x in cookies if "samesite=none" in x.lower()]
    assert none and all("secure" in x.lower() and "httponly" in x.lower() for x in none)
    # over plain loopback HTTP a Lax twin carries the state too; §7's session cookies stay Lax
    assert any("samesite=lax" in x.lower() and "secure" not in x.lower() for x in cookies)
    again = c.get(f"{h.base}/lti/login", params={"iss": platform.issuer, "login_hint": "ann",
                                                 "target_link_uri": f"{h.base}/lti/launch"})
    assert dict(httpx.URL(again.headers["location"]).params)["state"] != q["state"]  # fresh each time
    ok = httpx.Client(timeout=60)
    launch(h, platform, "ann", client=ok)
    session = [x for x in ok.cookies.jar if x.name == "attnp_learner"]
    assert session and session[0].has_nonstandard_attr("HttpOnly")


def test_a_platform_key_rotation_is_followed(tool, platform):
    h, _ = tool
    assert launch(h, platform, "ann").status_code == 200  # the tool has the key set cached now
    platform.rotate_key()
    time.sleep(MIN_REFRESH + 0.5)  # past the refetch floor (a bound on refetches, not a timing claim)
    got = launch(h, platform, "ann")
    assert got.status_code == 200, got.text  # the unknown kid made the tool fetch the key set again


def test_clock_skew_within_a_minute_is_accepted(tool, platform):
    h, _ = tool
    c = httpx.Client(timeout=60)
    got = launch(h, platform, "ben", "skewed", client=c)
    assert got.status_code == 200, got.text
    assert signed_in(h, c)


def test_same_person_is_one_learner_and_instructors_need_no_key(tool, platform):
    h, _ = tool
    a, b, t = (httpx.Client(timeout=60) for _ in range(3))
    assert launch(h, platform, "ben", client=a).status_code == 200
    assert launch(h, platform, "ben", client=b).status_code == 200
    assert a.get(f"{h.base}/api/summary").json()["learner"] == "Ben Okafor"
    assert signed_in(h, a) and signed_in(h, b)  # both browsers stay signed in
    assert a.cookies["attnp_learner"] != b.cookies["attnp_learner"]  # each its own session
    assert a.get(f"{h.base}/teach/api/class").status_code == 403  # a learner is no instructor
    assert launch(h, platform, "teacher", client=t).status_code == 200
    cls = t.get(f"{h.base}/teach/api/class")
    assert cls.status_code == 200
    assert cls.text.count("Ben Okafor") >= 1 and "Dr. Tess Teacher" not in cls.text
    assert "S-1002" in cls.text  # the LMS's student id (lis person_sourcedid), for the export
    # §7's rules hold for LTI sessions: no change without the page's token, no instructor API for learners
    assert t.post(f"{h.base}/teach/api/lti/roster", json={}).status_code == 403
    assert a.post(f"{h.base}/teach/api/lti/roster", json={}).status_code == 403
    assert a.get(f"{h.base}/teach/api/lti").status_code == 403
    assert t.get(f"{h.base}/teach/api/lti").json()["platforms"] == [platform.issuer]
    assert t.get(f"{h.base}/teach/api/class").json()["lti"]["scores"] == {"pending": 0, "failing": 0, "sent": 0}


def test_registration_takes_effect_in_a_running_class(tool, platform, tmp_path):
    h, data = tool
    second = Platform(client_id="tool-at-moodle", deployment_id="moodle-dep-1")
    try:
        second.tool_base = h.base
        got = httpx.Client(timeout=60).post(f"{h.base}/lti/login", data={
            "iss": second.issuer, "login_hint": "ann", "target_link_uri": f"{h.base}/lti/launch"})
        assert got.status_code == 400
        assert cli("register", str(data), *second.register_args()).returncode == 0
        assert launch(h, second, "ann").status_code == 200  # no restart
        # the same sub at another issuer is another person
        listed = cli("list", str(data), "--json")
        assert listed.returncode == 0 and second.issuer in listed.stdout and platform.issuer in listed.stdout
        # a deployment added by registering again
        platform.deployment_id = "deployment-2"
        assert launch(h, platform, "ben").status_code == 403
        assert cli("register", str(data), *platform.register_args()).returncode == 0
        assert launch(h, platform, "ben").status_code == 200
        listed = cli("list", str(data))
        assert "deployment-1, deployment-2" in listed.stdout
    finally:
        second.close()


def test_register_refuses_plain_http_off_loopback(tmp_path, platform):
    args = platform.register_args()
    args[args.index("--auth-url") + 1] = "http://lms.example.org/auth"
    done = cli("register", str(tmp_path / "c"), *args)
    assert done.returncode != 0 and "--auth-url" in done.stderr and "https" in done.stderr
    no_deployment = [a for a in platform.register_args() if a not in ("--deployment-id", platform.deployment_id)]
    done = cli("register", str(tmp_path / "c"), *no_deployment)
    assert done.returncode != 0 and "deployment" in done.stderr


def test_keys_served_public_only_rotated_and_still_trusted(tool, platform):
    h, data = tool
    c = httpx.Client(timeout=60)
    jwks = c.get(f"{h.base}/lti/jwks").json()
    assert len(jwks["keys"]) == 1
    assert all(set(k) == {"kty", "n", "e", "kid", "alg", "use"} for k in jwks["keys"])
    config = cli("config", str(data), "--url", h.base)
    assert "PRIVATE" not in config.stdout and '"d"' not in config.stdout
    pasted = json.loads(config.stdout)
    assert (pasted["oidc_initiation_url"], pasted["target_link_uri"], pasted["public_jwk_url"]) == (
        f"{h.base}/lti/login", f"{h.base}/lti/launch", f"{h.base}/lti/jwks")
    assert pasted["jwks"] == jwks and pasted["public_jwk"] == jwks["keys"][0]
    assert cli("config", str(data), "--url", "http://practice.example.org").returncode != 0
    first_kid = jwks["keys"][0]["kid"]
    ann = httpx.Client(timeout=60)
    launch(h, platform, "ann", client=ann)
    ann.get(f"{h.base}/api/summary")
    rotated = cli("rotate-key", str(data))
    assert rotated.returncode == 0
    kids = [k["kid"] for k in c.get(f"{h.base}/lti/jwks").json()["keys"]]
    assert len(kids) == 2 and kids[1] == first_kid  # the old key is still served
    cli("rotate-key", str(data))
    kids2 = [k["kid"] for k in c.get(f"{h.base}/lti/jwks").json()["keys"]]
    assert first_kid not in kids2 and kids2[1] == kids[0]
    assert cli("rotate-key", str(data), "--retire").returncode == 0  # every platform has moved
    assert [k["kid"] for k in c.get(f"{h.base}/lti/jwks").json()["keys"]] == kids2[:1]
    out, err = h.stop()
    assert "PRIVATE KEY" not in out + err
    for f in Path(data).iterdir():
        if f.is_file() and f.suffix in (".log", ".txt", ".json"):
            assert "PRIVATE KEY" not in f.read_text(errors="replace")


def test_token_audience_and_a_line_item_the_tool_creates(tmp_path):
    p = Platform(token_audience="https://auth.brightspace.example/core/connect/token")
    data = tmp_path / "class"
    try:
        assert cli("register", str(data), *p.register_args()).returncode == 0
        h = HostProcess(data)
        p.tool_base = h.base
        try:
            assert launch(h, p, "ann", "no_lineitem").status_code == 200
            # a score needs points: a passing check is slow, so the outbox is fed as a check would
            from attn_practice.grader.host.store.factory import open_store

            store = open_store(None, data)
            try:
                link = store.lti_links(store.lti_learner(p.issuer, USERS["ann"]["sub"]).id)[0]
                assert link.lineitem == ""
                store.enqueue_lti_score(link.id, link.learner_id, 2.0, 5.0, False)
            finally:
                store.close()
            assert wait_until(lambda: p.scores, timeout=60), (p.token_refusals, p.lineitems)
            assert not p.token_refusals  # the assertion's aud was the registered token audience
            assert len(p.lineitems) == 1 and p.lineitems[0]["resourceLinkId"] == "resource-link-1"
            assert p.scores[0]["path"] == "/lineitems/90/lineitem/scores"
            assert p.scores[0]["body"]["scoreGiven"] == 2.0
        finally:
            h.stop()
    finally:
        p.close()


def test_the_roster_import_adds_who_has_not_launched(tool, platform):
    h, _ = tool
    t = httpx.Client(timeout=60)
    assert launch(h, platform, "teacher", client=t).status_code == 200
    token = re.search(r'name="attnp-token" content="([^"]+)"', t.get(f"{h.base}/teach").text).group(1)
    got = t.post(f"{h.base}/teach/api/lti/roster", json={}, headers={"X-Attn-Token": token})
    assert got.status_code == 200, got.text
    assert got.json()["imported"] == [{"course": "Machine Learning 101", "members": 4, "added": 4}]
    again = t.post(f"{h.base}/teach/api/lti/roster", json={}, headers={"X-Attn-Token": token}).json()
    assert again["imported"][0]["added"] == 0  # importing twice adds no one twice
    cls = t.get(f"{h.base}/teach/api/class").text
    assert "Cal Roster" in cls and "S-1003" in cls and "Dr. Tess Teacher" not in cls
    # a rostered learner's first launch is that same learner, not a second one
    ben = httpx.Client(timeout=60)
    assert launch(h, platform, "ben", client=ben).status_code == 200
    assert t.get(f"{h.base}/teach/api/class").text.count('"Ben Okafor"') == 1
