"""Who a request is from, how a browser is signed in and out, and the CSRF rule.

Sessions (the seam every way in uses: join code + resume link today, LTI 1.3
launches next; call these, never set the cookies yourself):

- `start_learner_session(request, response, learner)` signs the browser in as
  `learner`; `start_instructor_session(request, response)` as the instructor.
  Each call makes a NEW random token (256 bits) for the cookie and stores
  only its SHA-256 hash with an expiry, so a sign-in never adopts a session
  id the browser already had (no fixation), and any session can be ended
  server-side. Both are store writes: call them from a thread
  (`run_in_threadpool`), not on the event loop.
- `end_session(request, response)` signs this browser out (its stored session
  is ended and its cookies cleared); `Store.end_sessions(kind[, learner])`
  ends them everywhere (`host set-password`, `host rotate-key`, the
  instructor's "sign out everywhere", a reissued resume link).
- `current_learner(request)` / `is_instructor(request)` read the cookie back
  (store reads: from a thread). A learner cookie from before sessions (their
  resume secret) is still honoured until their link is reissued.

Nothing signs a browser in, out or as someone else on a GET or on a request
another site can make: a sign-in or sign-out is a POST carrying a token the
other site cannot know (`require_form_csrf`: a form field matched by a cookie
before sign-in; `require_csrf`: the session's own token in the `X-Attn-Token`
header), from this server's own origin (`same_origin`: `Sec-Fetch-Site:
cross-site` or `same-site` and a foreign `Origin` are refused outright).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from attn_practice.grader.host.auth import (
    CSRF_HEADER,
    LEARNER_COOKIE,
    TEACH_COOKIE,
    hash_secret,
    learner_for,
    new_secret,
    same,
)
from attn_practice.grader.host.context import HostContext
from attn_practice.grader.host.store.base import Learner, SessionKind
from attn_practice.grader.host.web import Problem

FORM_COOKIE = "attnp_form"
COOKIE_DAYS = 120  # a learner's session: a term
TEACH_DAYS = 30
MAX_TOKEN = 200


def ctx_of(request: Request) -> HostContext:
    return request.app.state.ctx


def learner_secret(request: Request) -> str:
    """The learner cookie's token (the page's CSRF token is derived from it)."""
    return request.cookies.get(LEARNER_COOKIE, "")


def _hashed(token: str) -> str | None:
    return hash_secret(token) if token and len(token) <= MAX_TOKEN else None


# --------------------------------------------------------------- signing in and out
def _start(request: Request, response: Response, kind: SessionKind, learner_id: str,
           cookie: str, days: int) -> str:
    token = new_secret()
    ctx_of(request).store.create_session(hash_secret(token), kind, learner_id, time.time() + days * 86400)
    set_cookie(request, response, cookie, token, days=days)
    return token


def start_learner_session(request: Request, response: Response, learner: Learner) -> str:
    """Sign this browser in as `learner` (a fresh session; the one it had, if any, ends)."""
    _end_stored(request, LEARNER_COOKIE)
    return _start(request, response, SessionKind.LEARNER, learner.id, LEARNER_COOKIE, COOKIE_DAYS)


def start_instructor_session(request: Request, response: Response) -> str:
    """Sign this browser in as the class's instructor (a fresh session of its own)."""
    _end_stored(request, TEACH_COOKIE)
    return _start(request, response, SessionKind.INSTRUCTOR, "", TEACH_COOKIE, TEACH_DAYS)


def _end_stored(request: Request, cookie: str) -> None:
    hashed = _hashed(request.cookies.get(cookie, ""))
    if hashed is not None:
        ctx_of(request).store.end_session(hashed)


def end_session(request: Request, response: Response, kind: SessionKind) -> None:
    """Sign this browser out of `kind`: its stored session ends and its cookie is cleared."""
    cookie = LEARNER_COOKIE if kind is SessionKind.LEARNER else TEACH_COOKIE
    _end_stored(request, cookie)
    response.delete_cookie(cookie, path="/", httponly=True, samesite="lax",
                           secure=request.url.scheme == "https")


# --------------------------------------------------------------- who is asking
def current_learner(request: Request) -> Learner | None:
    """The signed-in learner (a store read; call from a thread, not the event loop)."""
    token = learner_secret(request)
    hashed = _hashed(token)
    if hashed is None:
        return None
    store = ctx_of(request).store
    return store.session_learner(hashed) or learner_for(store, token)  # or a cookie from before sessions


def require_learner(request: Request) -> Learner:
    learner = current_learner(request)
    if learner is None:
        raise Problem(401, "You are not signed in here: open your personal resume link (or the "
                           "class's join link) to continue.")
    return learner


def is_instructor(request: Request) -> bool:
    """Whether the instructor cookie names a live instructor session (a store read)."""
    hashed = _hashed(request.cookies.get(TEACH_COOKIE, ""))
    return hashed is not None and ctx_of(request).store.session_alive(hashed, SessionKind.INSTRUCTOR)


def require_instructor(request: Request) -> None:
    if not is_instructor(request):
        raise Problem(403, "This is the instructor's page: open the instructor link `attn-practice "
                           "host` printed, or sign in with the class password at /teach.")


def teach_csrf(request: Request) -> str:
    """The instructor page's token: bound to this browser's session, so it dies with it."""
    return ctx_of(request).keys().mac("teach-csrf", hash_secret(request.cookies.get(TEACH_COOKIE, "")))


# --------------------------------------------------------------- the CSRF rule
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
    """Double-submit for forms shown before anyone is signed in (join, resume, instructor sign-in)."""
    same_origin(request)
    if not same(form.get("csrf", ""), request.cookies.get(FORM_COOKIE, "")):
        raise Problem(403, "the form expired or came from elsewhere: reload the page and try again.")


def form_page(request: Request, render: Callable[[str], str], status_code: int = 200) -> HTMLResponse:
    """A page with a form posted before sign-in: `render(csrf)`, its double-submit cookie set."""
    csrf = request.cookies.get(FORM_COOKIE) or new_secret()
    response = HTMLResponse(render(csrf), status_code=status_code)
    set_cookie(request, response, FORM_COOKIE, csrf, days=1)
    return response


def set_cookie(request: Request, response: Response, name: str, value: str, *,
               days: int = COOKIE_DAYS) -> None:
    response.set_cookie(name, value, max_age=days * 86400, path="/", httponly=True,
                        samesite="lax", secure=request.url.scheme == "https")
