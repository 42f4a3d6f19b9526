"""Getting in and out: the landing page, the join link, the resume link, signing out.

Every sign-in is a POST with a token another site cannot know (session.py):
the join form, and the "Continue as Ada?" form a resume link opens (a GET
never signs in, so no page elsewhere can sign a browser in as its author's
account, nor switch a browser signed in as someone else). A student id is
held by one learner of the class: a second claim is refused, kept for the
instructor (who sees and settles it), and never tells the claimant who holds it.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from attn_practice.grader.host import pages
from attn_practice.grader.host.auth import hash_secret, learner_for, new_secret, same
from attn_practice.grader.host.claims import readable_id
from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.session import (
    ctx_of,
    current_learner,
    end_session,
    form_page,
    learner_secret,
    require_form_csrf,
    same_origin,
    start_learner_session,
)
from attn_practice.grader.host.store.base import Learner, SessionKind, StudentIdTaken
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
    keys = ctx_of(request).keys()
    if not keys.joining_open:
        return HTMLResponse(pages.joining_closed(), status_code=403)
    here = current_learner(request)
    name = here.display_name if here is not None else None
    return form_page(request, lambda csrf: pages.join_form(code, csrf, keys.ask_student_id, here=name))


async def join(request: Request) -> Response:
    code = request.path_params["code"]
    ctx = ctx_of(request)
    await run_in_threadpool(_code_ok, request, code)
    form = await read_form(request)
    require_form_csrf(request, form)
    keys = ctx.keys()
    if not keys.joining_open:
        return HTMLResponse(pages.joining_closed(), status_code=403)
    await ctx.limits.admit_join(client_address(request), ctx.store.learner_count)
    name = text_field(form, "display_name", max_len=80)
    student_id = text_field(form, "student_id", max_len=64, required=keys.ask_student_id)
    if not readable_id(student_id):
        raise Problem(400, "That student id is only spaces or invisible characters: type your "
                           "student id as your institution gives it.")
    secret = new_secret()

    def create() -> Response:
        try:
            learner = ctx.store.create_learner(name, student_id, hash_secret(secret))
        except StudentIdTaken as taken:
            if ctx.store.record_id_conflict(student_id, name, taken.holder_id):
                ctx.store.record_event("", EventKind.SETTINGS.value, {})  # the instructor's page redraws
            return form_page(request, lambda csrf: pages.join_form(
                code, csrf, keys.ask_student_id, pages.student_id_taken(student_id)), 409)
        ctx.store.record_event(learner.id, EventKind.JOINED.value, {})
        response = HTMLResponse(pages.resume_link(name, f"{_base(request)}/resume/{secret}"))
        start_learner_session(request, response, learner)
        return response

    return await run_in_threadpool(create)


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
    """GET /resume/<secret>: ask "Continue as Ada?" (a POST) before signing in; a browser already
    signed in as that learner just goes on."""
    secret = request.path_params["secret"]
    learner = _resumed(request, secret)
    here = current_learner(request)
    if here is not None and here.id == learner.id:
        return RedirectResponse("/", status_code=303)
    there, who = learner.display_name, here.display_name if here is not None else None
    return form_page(request, lambda csrf: pages.resume_confirm(there, who, secret, csrf))


async def resume_confirmed(request: Request) -> Response:
    """POST /resume/<secret> from the page above: a new session for the link's learner."""
    secret = request.path_params["secret"]
    form = await read_form(request, 4096)
    require_form_csrf(request, form)

    def sign_in() -> Response:
        learner = _resumed(request, secret)
        response = RedirectResponse("/", status_code=303)  # the secret leaves the address bar
        start_learner_session(request, response, learner)
        return response

    return await run_in_threadpool(sign_in)


async def sign_out(request: Request) -> Response:
    """POST /signout (the lesson page's button): the session ends here and on the server."""
    form = await read_form(request, 4096)
    same_origin(request)
    expected = ctx_of(request).keys().learner_csrf(learner_secret(request))
    if not learner_secret(request) or not same(form.get("csrf", ""), expected):
        raise Problem(403, "this sign-out did not come from your lesson page: reload it and sign "
                           "out there.")
    response = HTMLResponse(pages.signed_out())
    await run_in_threadpool(end_session, request, response, SessionKind.LEARNER)
    return response


def _base(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
