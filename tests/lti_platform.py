"""An LTI 1.3 platform of our own on loopback, for driving the tool as an LMS would.

It has its own RSA key (and another one, to sign launches the tool must
refuse), a JWKS URL, an OIDC auth endpoint answering with an auto-posted
form (`response_mode=form_post`), a token endpoint that verifies the tool's
`private_key_jwt` assertion against the tool's own key set, a line item with
a Moodle-like query string whose `/scores` endpoint records every score, and
a Names and Roles membership endpoint.

A launch starts at `/start?user=NAME&mode=MODE` (a page that posts the
third-party-initiated login to the tool). `mode` chooses what the platform
signs: `ok`, or one of the refused launches of CONTRACT §8 (`other_key`,
`replay_nonce`, `expired`, `wrong_aud`, `unknown_deployment`) or `hold` (the
launch form is shown, not submitted: its fields can be posted from another
browser via `/post`).
"""

from __future__ import annotations

import html
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
KID = "platform-key-1"

USERS = {
    "ann": {"sub": "user-ann-7f3", "given_name": "Ann", "family_name": "Lee", "roles": [LEARNER]},
    "ben": {"sub": "user-ben-2c9", "name": "Ben Okafor", "roles": [LEARNER], "sourcedid": "S-1002"},
    "eve": {"sub": "user-eve-0a1", "name": "Eve Mallory", "roles": [LEARNER]},
    "teacher": {"sub": "user-teacher-1", "name": "Dr. Tess Teacher", "roles": [INSTRUCTOR]},
}
ROSTER_ONLY = {"user_id": "user-cal-5d2", "name": "Cal Roster", "roles": [LEARNER], "status": "Active",
               "lis_person_sourcedid": "S-1003"}


def _auto_form(action: str, fields: dict[str, str], submit: bool = True) -> bytes:
    inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                     for k, v in fields.items())
    script = "<script>document.getElementById('f').submit()</script>" if submit else ""
    return (f'<!doctype html><meta charset=utf-8><title>platform</title><form id="f" method="post" '
            f'action="{html.escape(action)}">{inputs}<button id="go">Continue</button></form>{script}'
            ).encode()


class Platform:
    def __init__(self, client_id: str = "attn-tool", deployment_id: str = "deployment-1",
                 token_audience: str = "", host: str = "127.0.0.1"):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.token_audience = token_audience  # what the assertion's aud must be (else the token URL)
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = KID
        self.tool_base = ""  # the tool's base URL (set once the tool runs)
        self.tool_public_jwks: dict[str, Any] | None = None  # else fetched from the tool's /lti/jwks
        self.lock = threading.Lock()
        self.auth_requests: list[dict[str, str]] = []
        self.used_nonces: list[str] = []
        self.scores: list[dict[str, Any]] = []       # accepted
        self.refused_scores: list[dict[str, Any]] = []
        self.refuse_scores = False
        self.token_requests: list[dict[str, Any]] = []
        self.token_refusals: list[str] = []
        self.held: dict[str, str] = {}
        self.lineitems: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # host "localhost" puts the platform on another site than a tool on 127.0.0.1
        self.base = f"http://{host}:{self.server.server_address[1]}"
        self.issuer = self.base
        self.lineitem = f"{self.base}/lineitems/17/lineitem?type_id=17"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -------------------------------------------------------------- what tests register
    @property
    def auth_url(self) -> str:
        return f"{self.base}/auth"

    @property
    def token_url(self) -> str:
        return f"{self.base}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.base}/jwks"

    def register_args(self) -> list[str]:
        return ["--issuer", self.issuer, "--client-id", self.client_id, "--auth-url", self.auth_url,
                "--token-url", self.token_url, "--jwks-url", self.jwks_url,
                "--deployment-id", self.deployment_id] + (
                    ["--token-audience", self.token_audience] if self.token_audience else [])

    def start_url(self, user: str, mode: str = "ok") -> str:
        return f"{self.base}/start?{urlencode({'user': user, 'mode': mode})}"

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def rotate_key(self) -> None:
        """A new signing key under a new kid; the old one leaves the key set at once."""
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = f"platform-key-{secrets.token_hex(4)}"

    # -------------------------------------------------------------- the id_token
    def id_token(self, user: str, mode: str, nonce: str) -> str:
        u = USERS[user]
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer, "aud": self.client_id, "azp": self.client_id, "sub": u["sub"],
            "iat": now, "exp": now + 300, "nonce": nonce,
            **{k: u[k] for k in ("name", "given_name", "family_name") if k in u},
            **({LTI + "lis": {"person_sourcedid": u["sourcedid"]}} if "sourcedid" in u else {}),
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": self.deployment_id, LTI + "roles": u["roles"],
            LTI + "target_link_uri": f"{self.tool_base}/lti/launch",
            LTI + "resource_link": {"id": "resource-link-1", "title": "Attention practice"},
            LTI + "context": {"id": "course-42", "label": "ML101", "title": "Machine Learning 101"},
            AGS: {"scope": [LINEITEM_SCOPE, SCORE_SCOPE], "lineitem": self.lineitem,
                  "lineitems": f"{self.base}/lineitems?type_id=17"},
            NRPS: {"context_memberships_url": f"{self.base}/memberships/course-42",
                   "service_versions": ["2.0"]},
        }
        key = self.key
        if mode == "other_key":
            key = self.other_key
        elif mode == "expired":
            claims["iat"], claims["exp"] = now - 3600, now - 120
        elif mode == "wrong_aud":
            claims["aud"] = claims["azp"] = "another-tool"
        elif mode == "unknown_deployment":
            claims[LTI + "deployment_id"] = "deployment-nobody-registered"
        elif mode == "no_sub":
            del claims["sub"]
        elif mode == "wrong_type":
            claims[LTI + "message_type"] = "LtiDeepLinkingRequest"
        elif mode == "wrong_version":
            claims[LTI + "version"] = "1.1"
        elif mode == "wrong_azp":
            claims["aud"], claims["azp"] = [self.client_id, "another-tool"], "another-tool"
        elif mode == "skewed":  # the platform's clock 45 s ahead, 30 s behind on exp: within a minute
            claims["iat"], claims["exp"] = now + 45, now - 30
        elif mode == "future":
            claims["iat"] = now + 600
        elif mode == "no_lineitem":  # the tool may create its own line item
            del claims[AGS]["lineitem"]
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    # -------------------------------------------------------------- HTTP
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, data: Any, ctype: str = "application/json") -> None:
                self._send(status, json.dumps(data).encode(), ctype)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _bearer(self, scope: str) -> bool:
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                with platform.lock:
                    return any(t["token"] == token and scope in t["scope"].split()
                               for t in platform.token_requests)

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/jwks":
                    return self._json(200, platform.jwks())
                if url.path == "/start":
                    return self._send(200, _auto_form(f"{platform.tool_base}/lti/login", {
                        "iss": platform.issuer, "login_hint": q["user"],
                        "target_link_uri": f"{platform.tool_base}/lti/launch",
                        "lti_message_hint": q.get("mode", "ok"), "client_id": platform.client_id,
                        "lti_deployment_id": platform.deployment_id}))
                if url.path == "/frame":  # the course page embedding the launch, as LMSs do by default
                    src = html.escape(f"/start?{urlencode({'user': q['user'], 'mode': q.get('mode', 'ok')})}")
                    return self._send(200, f'<!doctype html><title>course</title><h1>Course</h1><iframe id="tool" '
                                      f'src="{src}" width="800" height="400"></iframe>'.encode())
                if url.path == "/auth":
                    return self._auth(q)
                if url.path == "/post":  # another browser posting held launch fields
                    with platform.lock:
                        held = dict(platform.held)
                    return self._send(200, _auto_form(f"{platform.tool_base}/lti/launch", held))
                if url.path.startswith("/memberships/"):
                    if not self._bearer(NRPS_SCOPE):
                        return self._json(401, {"error": "no token with the membership scope"})
                    members = [{"user_id": u["sub"], "name": u.get("name") or f"{u['given_name']} "
                                f"{u['family_name']}", "roles": u["roles"], "status": "Active"}
                               for u in USERS.values()] + [ROSTER_ONLY]
                    return self._json(200, {"id": platform.base + url.path, "members": members},
                                      "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
                if url.path == "/lineitems":
                    with platform.lock:
                        return self._json(200, list(platform.lineitems))
                return self._send(404, b"not found")

            def _auth(self, q: dict[str, str]) -> None:
                need = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                        "prompt": "none", "client_id": platform.client_id,
                        "redirect_uri": f"{platform.tool_base}/lti/launch"}
                wrong = [k for k, v in need.items() if q.get(k) != v]
                wrong += [k for k in ("state", "nonce", "login_hint", "lti_message_hint") if not q.get(k)]
                if wrong:
                    return self._send(400, f"bad auth request: {wrong}".encode())
                mode = q["lti_message_hint"]
                with platform.lock:
                    platform.auth_requests.append(q)
                    nonce = q["nonce"]
                    if mode == "replay_nonce":
                        nonce = platform.used_nonces[-1]
                    elif mode in ("ok", "hold", "skewed", "no_lineitem"):
                        platform.used_nonces.append(nonce)
                fields = {"id_token": platform.id_token(q["login_hint"], mode, nonce), "state": q["state"]}
                if mode == "hold":
                    with platform.lock:
                        platform.held = fields
                self._send(200, _auto_form(q["redirect_uri"], fields, submit=mode != "hold"))

            def do_POST(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                body = self._body()
                if url.path == "/token":
                    return self._token({k: v[0] for k, v in parse_qs(body.decode()).items()})
                if url.path.endswith("/scores"):
                    return self._score(url, body)
                if url.path == "/lineitems":
                    item = {**json.loads(body), "id": f"{platform.base}/lineitems/{len(platform.lineitems) + 90}"
                            "/lineitem"}
                    with platform.lock:
                        platform.lineitems.append(item)
                    return self._json(201, item, "application/vnd.ims.lis.v2.lineitem+json")
                return self._send(404, b"not found")

            def _token(self, form: dict[str, str]) -> None:
                try:
                    assert form.get("grant_type") == "client_credentials", "grant_type"
                    assert form.get("client_assertion_type") == \
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion_type"
                    assertion = form["client_assertion"]
                    kid = jwt.get_unverified_header(assertion)["kid"]
                    if platform.tool_public_jwks is not None:  # a tool whose key set we were given
                        key = jwt.PyJWKSet.from_dict(platform.tool_public_jwks)[kid].key
                    else:
                        keys = jwt.PyJWKClient(f"{platform.tool_base}/lti/jwks", cache_jwk_set=False)
                        key = keys.get_signing_key(kid).key
                    got = jwt.decode(assertion, key, algorithms=["RS256"], audience=platform.token_audience or platform.token_url,
                                     options={"require": ["iss", "sub", "aud", "iat", "exp", "jti"]})
                    assert got["iss"] == got["sub"] == platform.client_id, "iss/sub"
                    assert got["exp"] - got["iat"] <= 3600, "a long-lived assertion"
                except (AssertionError, KeyError, jwt.PyJWTError) as exc:
                    with platform.lock:
                        platform.token_refusals.append(repr(exc))
                    return self._json(401, {"error": "invalid_client", "why": repr(exc)})
                token = secrets.token_urlsafe(16)
                with platform.lock:
                    platform.token_requests.append({"token": token, "scope": form.get("scope", ""),
                                                    "jti": got["jti"], "kid": kid})
                self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                 "scope": form.get("scope", "")})

            def _score(self, url: Any, body: bytes) -> None:
                record = {"path": url.path, "query": url.query, "content_type": self.headers.get("Content-Type"),
                          "body": json.loads(body), "authorized": self._bearer(SCORE_SCOPE),
                          "received": time.time()}
                with platform.lock:
                    if platform.refuse_scores:
                        platform.refused_scores.append(record)
                        return self._send(503, b"maintenance: try again later", "text/plain")
                    platform.scores.append(record)
                self._send(204, b"")

        return Handler


@pytest.fixture(name="platform")
def platform_fixture() -> Any:
    """A running platform for one test, closed after it."""
    p = Platform()
    try:
        yield p
    finally:
        p.close()
