"""The first thing every request meets: what no route takes, and one browser's share of the server.

- A NUL character in the path or the query (`%00`) is refused with 400
  here, before any route passes it to a database (PostgreSQL cannot store
  one, and would fail the request).
- One browser (its session cookie) has at most `REQUESTS_PER_BROWSER`
  requests in flight, and sends at most `Limits.requests` a second (after a
  burst); the next is answered 429 at once, before any database read, so a
  learner who opens a hundred requests holds a few of the server's threads,
  not all, and one who sends thousands costs little.
  Event streams have their own cap (per learner) and are not counted here,
  nor the page's static files (served from memory); /healthz and /readyz
  are never limited.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from attn_practice.grader.host.auth import LEARNER_COOKIE, TEACH_COOKIE
from attn_practice.grader.host.limits import seconds
from attn_practice.grader.host.web import problem_response

UNLIMITED = frozenset({"/healthz", "/readyz", "/api/events", "/teach/api/events"})
MAX_COOKIE = 200


def browser_of(scope: Scope) -> str | None:
    """The session cookie's value (learner first), or None for a browser without one."""
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            try:
                jar = SimpleCookie(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a cookie header we cannot read identifies no one
                return None
            for cookie in (LEARNER_COOKIE, TEACH_COOKIE):
                morsel = jar.get(cookie)
                if morsel is not None and 0 < len(morsel.value) <= MAX_COOKIE:
                    return f"{cookie}={morsel.value}"
    return None


def has_nul(scope: Scope) -> bool:
    return "\0" in scope.get("path", "") or b"\0" in unquote_to_bytes(scope.get("query_string", b""))


class RequestGuard:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if has_nul(scope):
            response = problem_response(Request(scope), 400, "the address holds a NUL character "
                                        "(%00), which no page or id has.")
            await response(scope, receive, send)
            return
        path = scope.get("path", "")
        browser = None if path in UNLIMITED or path.startswith("/static/") else browser_of(scope)
        if browser is None:
            await self.app(scope, receive, send)
            return
        limits = scope["app"].state.ctx.limits
        wait = limits.requests.allow(browser)
        if wait:  # before any database read: a flood from one browser costs little
            response = problem_response(Request(scope), 429, "this browser sends requests very "
                                        "fast: this one was not taken; the page tries again by "
                                        "itself.", {"Retry-After": str(seconds(wait))})
            await response(scope, receive, send)
            return
        slots = limits.browsers
        if not slots.enter(browser):
            response = problem_response(Request(scope), 429, "this browser has many requests "
                                        "waiting already: this one was not taken; the page tries "
                                        "again by itself.", {"Retry-After": "1"})
            await response(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            slots.leave(browser)
