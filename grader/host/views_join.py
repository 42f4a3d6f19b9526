"""Getting in: the landing page, the join link, the resume link."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from attn_practice.grader.host import pages
from attn_practice.grader.host.auth import LEARNER_COOKIE, hash_secret, learner_for, new_secret
from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.session import (
    FORM_COOKIE,
    ctx_of,
    require_form_csrf,
    set_cookie,
)
from attn_practice.grader.host.store.base import Learner
from attn_practice.grader.host.web import Problem, client_address, read_form, text_field

MAX_CODE = 100


def _too_many(wait: float) -> Problem:
    return Problem(429, f"Too many attempts from your address: wait {wait:.0f} s and try again.",
                   {"Retry-After": str(int(wait) + 1)})


def _code_ok(request: Request, code: str) -> None:
    """A wrong join code costs an attempt (rate limited per address), and is a 404."""
    ctx = ctx_of(request)
    if len(code) <= MAX_CODE and ctx.keys().join_ok(code):
        return
    wait = ctx.limits.secrets.allow(client_address(request))
    if wait:
        raise _too_many(wait)
    raise Problem(404, "This join link is not (or no longer) valid: ask your instructor for the "
                       "current one.")


def join_page(request: Request) -> Response:
    code = request.path_params["code"]
    _code_ok(request, code)
    ctx = ctx_of(request)
    keys = ctx.keys()
    if not keys.joining_open:
        return HTMLResponse(pages.joining_closed(), status_code=403)
    csrf = request.cookies.get(FORM_COOKIE) or new_secret()
    response = HTMLResponse(pages.join_form(code, csrf, keys.ask_student_id))
    set_cookie(request, response, FORM_COOKIE, csrf, days=1)
    return response


async def join(request: Request) -> Response:
    code = request.path_params["code"]
    ctx = ctx_of(request)
    await run_in_threadpool(_code_ok, request, code)
    form = await read_form(request)
    require_form_csrf(request, form)
    keys = ctx.keys()
    if not keys.joining_open:
        return HTMLResponse(pages.joining_closed(), status_code=403)
    await ctx.limits.admit_join(client_address(request), lambda: len(ctx.store.learners()))
    name = text_field(form, "display_name", max_len=80)
    student_id = text_field(form, "student_id", max_len=64, required=keys.ask_student_id)
    secret = new_secret()

    def create() -> None:
        learner = ctx.store.create_learner(name, student_id, hash_secret(secret))
        ctx.store.record_event(learner.id, EventKind.JOINED.value, {})

    await run_in_threadpool(create)
    link = f"{_base(request)}/resume/{secret}"
    response = HTMLResponse(pages.resume_link(name, link))
    set_cookie(request, response, LEARNER_COOKIE, secret)
    return response


def _resumed(request: Request, secret: str) -> Learner:
    ctx = ctx_of(request)
    learner = learner_for(ctx.store, secret)
    if learner is None:
        wait = ctx.limits.secrets.allow(client_address(request))
        if wait:
            raise _too_many(wait)
        raise Problem(404, "This resume link is not valid (maybe the instructor issued you a new "
                           "one): ask your instructor.")
    return learner


def resume(request: Request) -> Response:
    """Sign in by the link; a browser signed in as someone else is asked first (a link sent by
    another learner must not silently switch whose work this browser saves into)."""
    secret = request.path_params["secret"]
    learner = _resumed(request, secret)
    here = learner_for(ctx_of(request).store, request.cookies.get(LEARNER_COOKIE))
    if here is not None and here.id != learner.id:
        csrf = request.cookies.get(FORM_COOKIE) or new_secret()
        response = HTMLResponse(pages.switch_learner(here.display_name, learner.display_name, secret, csrf))
        set_cookie(request, response, FORM_COOKIE, csrf, days=1)
        return response
    response = RedirectResponse("/", status_code=303)  # the secret leaves the address bar
    set_cookie(request, response, LEARNER_COOKIE, secret)
    return response


async def resume_confirmed(request: Request) -> Response:
    secret = request.path_params["secret"]
    form = await read_form(request, 4096)
    require_form_csrf(request, form)
    await run_in_threadpool(_resumed, request, secret)
    response = RedirectResponse("/", status_code=303)
    set_cookie(request, response, LEARNER_COOKIE, secret)
    return response


def _base(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
