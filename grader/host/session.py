"""Who a request is from, and the CSRF rule every state change follows.

A learner is signed in by the `attnp_learner` cookie (their resume secret);
the instructor by the `attnp_teach` cookie (an HMAC of the class key). A
state change (POST) must carry the session's CSRF token in the
`X-Attn-Token` header (JSON APIs) or a `csrf` form field matched by a
cookie (forms before sign-in), and an `Origin`, when sent, that is this
server's own; `Sec-Fetch-Site: cross-site` is refused outright.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host.auth import (
    CSRF_HEADER,
    LEARNER_COOKIE,
    TEACH_COOKIE,
    learner_for,
    same,
)
from attn_practice.grader.host.context import HostContext
from attn_practice.grader.host.store.base import Learner
from attn_practice.grader.host.web import Problem

FORM_COOKIE = "attnp_form"
COOKIE_DAYS = 120


def ctx_of(request: Request) -> HostContext:
    return request.app.state.ctx


def learner_secret(request: Request) -> str:
    return request.cookies.get(LEARNER_COOKIE, "")


def current_learner(request: Request) -> Learner | None:
    """The signed-in learner (a store read; call from a thread, not the event loop)."""
    return learner_for(ctx_of(request).store, learner_secret(request))


def require_learner(request: Request) -> Learner:
    learner = current_learner(request)
    if learner is None:
        raise Problem(401, "You are not signed in here: open your personal resume link (or the "
                           "class's join link) to continue.")
    return learner


def is_instructor(request: Request) -> bool:
    return same(request.cookies.get(TEACH_COOKIE, ""), ctx_of(request).keys().teach_cookie())


def require_instructor(request: Request) -> None:
    if not is_instructor(request):
        raise Problem(403, "This is the instructor's page: open the instructor link `attn-practice "
                           "host` printed, or sign in with the class password at /teach.")


def same_origin(request: Request) -> None:
    """Refuse what a browser says came from another site (the token checks still follow).

    Our pages send `Referrer-Policy: no-referrer` (serve's headers), under which a
    browser's form POST says `Origin: null`: that is no information, not a foreign origin.
    """
    site = request.headers.get("sec-fetch-site", "")
    if site in ("cross-site", "same-site"):
        raise Problem(403, "requests from other sites are refused.")
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
        if origin.lower() != own:
            raise Problem(403, "requests from another origin are refused.")


def require_csrf(request: Request, expected: str) -> None:
    """The header token of a JSON state change (a cross-site form cannot set headers)."""
    same_origin(request)
    if not same(request.headers.get(CSRF_HEADER, ""), expected):
        raise Problem(403, f"this change needs the page's token in the {CSRF_HEADER} header: "
                           "reload the page and try again.")


def require_form_csrf(request: Request, form: dict[str, str]) -> None:
    """Double-submit for forms shown before anyone is signed in (join, instructor sign-in)."""
    same_origin(request)
    if not same(form.get("csrf", ""), request.cookies.get(FORM_COOKIE, "")):
        raise Problem(403, "the form expired or came from elsewhere: reload the page and try again.")


def set_cookie(request: Request, response: Response, name: str, value: str, *,
               days: int = COOKIE_DAYS) -> None:
    response.set_cookie(name, value, max_age=days * 86400, path="/", httponly=True,
                        samesite="lax", secure=request.url.scheme == "https")
