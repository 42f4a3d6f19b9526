"""The login's `state`, bound to the browser that started the login.

`/lti/login` sets a cookie holding the state; `/lti/launch` accepts the
posted state only if this browser holds that cookie. The launch is a
cross-site form post, which carries only `SameSite=None` cookies, and
browsers keep `SameSite=None` cookies only when they are `Secure`: so over
TLS the cookie is `SameSite=None; Secure`. Plain HTTP is allowed on loopback
addresses only (CONTRACT §8): Chromium keeps a `Secure` cookie from a
loopback address, so the same cookie works there (a platform on `localhost`,
the tool on `127.0.0.1`: two sites); for a browser that refuses it over
HTTP, a twin `SameSite=Lax` cookie (not Secure) carries the same state, which
comes back when the platform is the same site (another port of the host). Each login has its own cookie name (a hash prefix of its state), so
two logins in two tabs do not overwrite each other. Cookies are `HttpOnly`,
scoped to `/lti/`, live ten minutes, and are cleared by the launch.
The §7 session cookies are untouched (still `SameSite=Lax`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host.auth import hash_secret, same

PREFIX = "attnp_lti_"
LAX = "_lax"
MAX_AGE = 600
PATH = "/lti/"


def _name(state: str) -> str:
    return PREFIX + hash_secret(state)[:16]


def remember(request: Request, response: Response, state: str) -> None:
    tls = request.url.scheme == "https"
    name = _name(state)
    response.set_cookie(name, state, max_age=MAX_AGE, path=PATH, httponly=True, samesite="none",
                        secure=True)
    if not tls:
        response.set_cookie(name + LAX, state, max_age=MAX_AGE, path=PATH, httponly=True,
                            samesite="lax", secure=False)


def matches(request: Request, state: str) -> bool:
    """Whether this browser started the login that `state` names."""
    if not state or len(state) > 200:
        return False
    name = _name(state)
    return any(same(request.cookies.get(n, ""), state) for n in (name, name + LAX))


def forget(request: Request, response: Response, state: str) -> None:
    if state and len(state) <= 200:
        name = _name(state)
        for n, site, secure in ((name, "none", True), (name + LAX, "lax", False)):
            if n in request.cookies:
                response.delete_cookie(n, path=PATH, httponly=True, samesite=site, secure=secure)
