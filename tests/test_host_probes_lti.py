"""Probes: the LTI 1.3 endpoints attacked over real HTTP (a platform of our own on loopback).

Forged id_tokens (alg none, HS256 keyed with the platform's public key, a
payload changed after signing, a `jku`/`kid` pointing elsewhere, another
key), a replayed launch, a launch posted by another browser, open redirects
through `target_link_uri`, hostile names in the token, and an LTI learner
session on the instructor surface. Every forged launch gets a page that says
what was wrong and no session cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import subprocess
import time
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from host_probes import running_host
from test_host_support import console_script

jwt = pytest.importorskip("jwt", reason="PyJWT is not installed (pip install 'attn-practice[test]')")
from lti_platform import LTI, Platform  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    platform = Platform()
    try:
        with running_host(tmp_path_factory.mktemp("lti") / "class") as host:
            platform.tool_base = host.base
            done = subprocess.run([console_script(), "host", "lti", "register", str(host.data_dir),
                                   *platform.register_args()], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            yield platform, host
    finally:
        platform.close()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _login(platform, host, client, user="ann", target=None):
    """The tool's login for this browser: (state, nonce) it sent to the platform."""
    r = client.get("/lti/login", params={"iss": platform.issuer, "login_hint": user,
                                         "target_link_uri": target or f"{host.base}/lti/launch",
                                         "lti_message_hint": "ok", "client_id": platform.client_id})
    assert r.status_code == 302, r.text
    location = r.headers["location"]
    assert location.startswith(platform.auth_url), location  # never anywhere the login named
    q = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    return q["state"], q["nonce"]


def _claims(platform, host, nonce, user="ann"):
    good = jwt.decode(platform.id_token(user, "ok", nonce), options={"verify_signature": False})
    return good


def _launch(client, token, state):
    return client.post("/lti/launch", data={"id_token": token, "state": state})


def _refused(r) -> None:
    assert r.status_code in (400, 401, 403), (r.status_code, r.text[-300:])
    assert "refused" in r.text.lower()
    for line in r.headers.get_list("set-cookie"):
        given = re.match(r"(attnp_learner|attnp_teach)=([^;]*)", line)
        assert given is None or given.group(2) in ("", '""'), line  # no session, only a cleared one


def test_forged_id_tokens_sign_no_one_in(lab):
    platform, host = lab
    for forge in ("none", "hs256", "tampered", "jku", "other_key", "unknown_kid_other_key"):
        browser = host.client()
        state, nonce = _login(platform, host, browser)
        claims = _claims(platform, host, nonce)
        if forge == "none":
            none = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
            token = f"{none}.{_b64(json.dumps(claims).encode())}."
        elif forge == "hs256":
            pem = platform.jwks()["keys"][0]
            secret = json.dumps(pem).encode()
            head = _b64(json.dumps({"alg": "HS256", "kid": platform.kid}).encode())
            body = _b64(json.dumps(claims).encode())
            sig = _b64(hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest())
            token = f"{head}.{body}.{sig}"
        elif forge == "tampered":
            head, _, sig = jwt.encode(claims, platform.key, algorithm="RS256",
                                      headers={"kid": platform.kid}).split(".")
            claims[LTI + "roles"] = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]
            token = f"{head}.{_b64(json.dumps(claims).encode())}.{sig}"
        elif forge == "jku":
            token = jwt.encode(claims, platform.other_key, algorithm="RS256",
                               headers={"kid": platform.kid, "jku": "http://127.0.0.1:9/evil-jwks"})
        elif forge == "other_key":
            token = jwt.encode(claims, platform.other_key, algorithm="RS256", headers={"kid": platform.kid})
        else:
            token = jwt.encode(claims, platform.other_key, algorithm="RS256", headers={"kid": "attacker"})
        r = _launch(browser, token, state)
        _refused(r)
        assert browser.get("/api/summary").status_code == 401, forge
        assert browser.get("/teach/api/class").status_code == 403, forge


def test_a_launch_replayed_or_posted_by_another_browser_is_refused(lab):
    platform, host = lab
    victim = host.client()
    state, nonce = _login(platform, host, victim)
    token = platform.id_token("ann", "ok", nonce)
    thief = host.client()
    _refused(_launch(thief, token, state))  # no state cookie of this browser
    other_state, _ = _login(platform, host, thief)
    _refused(_launch(thief, token, other_state))  # its own state, another's nonce
    ok = _launch(victim, token, state)
    assert ok.status_code == 200 and "Signed in" in ok.text, ok.text[-300:]
    assert victim.get("/api/summary").status_code == 200
    replay = host.client()
    state2, _ = _login(platform, host, replay)
    _refused(_launch(replay, token, state2))  # the nonce is spent
    _refused(_launch(victim, token, state))


def test_no_open_redirect_and_hostile_names_are_text(lab):
    platform, host = lab
    browser = host.client()
    state, nonce = _login(platform, host, browser, target="https://evil.example/steal")
    claims = _claims(platform, host, nonce, user="eve")
    claims["name"] = '<img src=x id=pwned onerror="alert(1)">Eve'
    claims[LTI + "target_link_uri"] = "https://evil.example/steal"
    claims["iat"] = int(time.time())
    token = jwt.encode(claims, platform.key, algorithm="RS256", headers={"kid": platform.kid})
    r = _launch(browser, token, state)
    assert r.status_code == 200, r.text[-300:]
    assert "evil.example" not in r.headers.get("location", "") and "evil.example" not in r.text
    assert "<img" not in r.text and "Eve" in unescape(r.text)
    # an LTI learner is a learner: nothing of the instructor's
    assert browser.get("/teach/api/class").status_code == 403
    assert browser.get("/teach/export.json").status_code == 403
    for bad in ("https://evil.example/", "//evil.example/", "javascript:alert(1)"):
        r = host.client().get("/lti/login", params={"iss": platform.issuer, "login_hint": "ann",
                                                    "target_link_uri": bad, "client_id": platform.client_id})
        assert r.status_code in (302, 400)
        assert not r.headers.get("location", platform.auth_url).startswith(("https://evil", "//evil", "javascript"))
