"""OAuth 2 access tokens for AGS and NRPS: client credentials with a `private_key_jwt` assertion.

The assertion (RFC 7523) is a JWT signed by the tool's current key: `iss` and
`sub` the client id, `aud` the platform's token audience (its token URL
unless registered otherwise), five minutes' life and a random `jti`. Tokens
are cached per (platform, scopes) until a minute before they expire.
"""

from __future__ import annotations

import secrets
import threading
import time
from urllib.parse import urlencode

import jwt

from attn_practice.grader.host.lti import http
from attn_practice.grader.host.lti.claims import CLIENT_ASSERTION_TYPE
from attn_practice.grader.host.lti.registry import Platform, current_key
from attn_practice.grader.host.store.base import Store

ASSERTION_SECONDS = 300
EARLY = 60.0


def assertion(store: Store, platform: Platform) -> str:
    key = current_key(store)
    now = int(time.time())
    return jwt.encode({"iss": platform.client_id, "sub": platform.client_id, "aud": platform.audience,
                       "iat": now, "exp": now + ASSERTION_SECONDS, "jti": secrets.token_urlsafe(16)},
                      key.private_key(), algorithm="RS256", headers={"kid": key.kid})


class Tokens:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], tuple[str, float]] = {}

    def get(self, store: Store, platform: Platform, scopes: list[str]) -> str:
        key = (platform.issuer, platform.client_id, " ".join(sorted(scopes)))
        with self._lock:
            token, until = self._cache.get(key, ("", 0.0))
        if token and time.time() < until:
            return token
        body = urlencode({"grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
                          "client_assertion": assertion(store, platform), "scope": key[2]}).encode()
        answer = http.call("POST", platform.token_url, body=body,
                           headers={"Content-Type": "application/x-www-form-urlencoded",
                                    "Accept": "application/json"})
        if answer.status != 200:
            raise http.PlatformError(f"the platform's token URL refused a token: {answer.brief()}")
        data = answer.json()
        token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise http.PlatformError("the platform's token URL answered without an access_token")
        try:
            life = float(data.get("expires_in", 3600))
        except (TypeError, ValueError):
            life = 3600.0
        with self._lock:
            self._cache[key] = (token, time.time() + max(0.0, life - EARLY))
        return token

    def forget(self, platform: Platform) -> None:
        with self._lock:
            for k in [k for k in self._cache if k[:2] == (platform.issuer, platform.client_id)]:
                del self._cache[k]


TOKENS = Tokens()
