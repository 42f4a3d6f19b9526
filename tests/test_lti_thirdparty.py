"""The test platform checked by a third-party LTI 1.3 library (PyLTI1p3, as a tool).

`lti_platform.Platform` is what every LTI test of the tool trusts; if it and
the tool shared a misreading of the spec, both could agree and both be
wrong. So here PyLTI1p3 (a maintained tool library, not our code) logs in
to the platform, validates its launch (state, nonce, RS256 signature against
the platform's JWKS, deployment, message claims) and posts a grade through
the platform's token endpoint with its own `private_key_jwt` assertion: the
platform must satisfy an independent implementation, not just ours.
"""

from __future__ import annotations

import html
import re
import typing as t
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti_platform import SCORE_SCOPE, USERS, Platform

pylti = pytest.importorskip("pylti1p3")
from pylti1p3.cookie import CookieService  # noqa: E402
from pylti1p3.grade import Grade  # noqa: E402
from pylti1p3.message_launch import MessageLaunch  # noqa: E402
from pylti1p3.oidc_login import OIDCLogin  # noqa: E402
from pylti1p3.redirect import Redirect  # noqa: E402
from pylti1p3.registration import Registration  # noqa: E402
from pylti1p3.request import Request  # noqa: E402
from pylti1p3.session import SessionService  # noqa: E402
from pylti1p3.tool_config import ToolConfDict  # noqa: E402

TOOL = "https://tool.example.edu"
FIELD = re.compile(r'name="([^"]+)" value="([^"]*)"')


class Req(Request):
    def __init__(self, params: dict[str, str], session: dict[str, t.Any]):
        self.params, self._session = params, session

    @property
    def session(self) -> dict[str, t.Any]:
        return self._session

    def is_secure(self) -> bool:
        return True

    def get_param(self, key: str) -> str:
        return self.params.get(key, "")


class Cookies(CookieService):
    def __init__(self) -> None:
        self.jar: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self.jar.get(self._name(name))

    def set_cookie(self, name: str, value: t.Any, exp: int | None = 3600) -> None:
        self.jar[self._name(name)] = str(value)


class Go(Redirect):
    def __init__(self, url: str):
        self.url = url

    def do_redirect(self) -> str:
        return self.url

    def do_js_redirect(self) -> str:
        return self.url

    def set_redirect_url(self, location: str) -> None:
        self.url = location

    def get_redirect_url(self) -> str:
        return self.url


class Login(OIDCLogin):
    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def get_redirect(self, url: str) -> t.Any:
        return Go(url)

    def get_response(self, html_text: str) -> t.Any:
        return html_text


class Launch(MessageLaunch):
    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)


pytestmark = pytest.mark.slow


@pytest.fixture
def platform():
    p = Platform()
    p.tool_base = TOOL
    try:
        yield p
    finally:
        p.close()


def test_pylti1p3_accepts_the_platforms_launch_and_its_token_endpoint(platform):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    conf = ToolConfDict({platform.issuer: [{
        "default": True, "client_id": platform.client_id, "auth_login_url": platform.auth_url,
        "auth_token_url": platform.token_url, "auth_audience": None, "key_set_url": platform.jwks_url,
        "key_set": None, "deployment_ids": [platform.deployment_id]}]})
    conf.set_private_key(platform.issuer, pem, client_id=platform.client_id)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    conf.set_public_key(platform.issuer, public, client_id=platform.client_id)
    platform.tool_public_jwks = {"keys": [Registration.get_jwk(public)]}  # its own kid

    launch = pylti_launch(platform, conf, "ok")
    data = launch.validate()  # raises LtiException on anything the library finds wrong
    body = launch.get_launch_data()
    assert data is launch and launch.is_resource_launch()
    assert body["sub"] == USERS["ann"]["sub"] and body["aud"] == platform.client_id
    assert launch.has_ags() and launch.has_nrps()

    # the library's own client-credentials assertion satisfies the platform's token endpoint,
    # and its score lands where the platform records scores (line item path + /scores, query kept)
    grade = (Grade().set_score_given(3).set_score_maximum(5).set_user_id(body["sub"])
             .set_timestamp("2026-12-06T23:00:00.123456+00:00").set_activity_progress("Completed")
             .set_grading_progress("FullyGraded"))
    launch.get_ags().put_grade(grade)
    assert not platform.token_refusals, platform.token_refusals
    assert [s["body"]["scoreGiven"] for s in platform.scores] == [3]
    assert platform.scores[0]["query"] == "type_id=17" and platform.scores[0]["authorized"]
    assert SCORE_SCOPE in platform.token_requests[-1]["scope"]

    # and the launches the tool must refuse, the library refuses too (the platform really tampers)
    for mode in ("other_key", "expired", "wrong_aud", "unknown_deployment"):
        with pytest.raises(Exception):  # noqa: B017 - LtiException, or a bare Exception for an unknown aud
            pylti_launch(platform, conf, mode).validate()


def pylti_launch(platform: Platform, conf: ToolConfDict, mode: str) -> Launch:
    session: dict[str, t.Any] = {}
    cookies = Cookies()
    login_params = {"iss": platform.issuer, "login_hint": "ann", "target_link_uri": f"{TOOL}/lti/launch",
                    "lti_message_hint": mode, "client_id": platform.client_id}
    redirect = Login(Req(login_params, session), conf, SessionService(Req(login_params, session)),
                     cookies).disable_check_cookies().redirect(f"{TOOL}/lti/launch")
    assert parse_qs(urlsplit(redirect).query)["redirect_uri"] == [f"{TOOL}/lti/launch"]
    page = httpx.get(redirect, timeout=30)
    assert page.status_code == 200, page.text
    fields = {k: html.unescape(v) for k, v in FIELD.findall(page.text)}
    assert set(fields) == {"id_token", "state"}

    request = Req(fields, session)
    return Launch(request, conf, SessionService(request), cookies)
