"""The instructor's page and API: the live class picture, a learner's drill-down, the actions.

Every route here needs an instructor session (session.py), begun by the
instructor link (`/teach?key=KEY`, the key then leaves the address bar; opened
from another site's page it asks first) or the class password; wrong keys and
passwords are rate limited per address. "Sign out everywhere" ends every
instructor session; student-id clashes are listed and settled here (claims.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from attn_practice.grader.host import claims, export, pages
from attn_practice.grader.host.auth import (
    TEACH_COOKIE,
    Setting,
    hash_secret,
    new_join_code,
    new_secret,
    password_ok,
    same,
)
from attn_practice.grader.host.class_view import class_picture, drilldown
from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.lti import teach_views as lti_teach
from attn_practice.grader.host.session import (
    ctx_of,
    end_session,
    form_page,
    is_instructor,
    require_csrf,
    require_form_csrf,
    require_instructor,
    same_origin,
    start_instructor_session,
    teach_csrf,
)
from attn_practice.grader.host.static import teach_page
from attn_practice.grader.host.store.base import SessionKind, StudentIdTaken
from attn_practice.grader.host.web import Problem, client_address, read_form, read_json, text_field


def _wrong(request: Request, what: str) -> Problem:
    wait = ctx_of(request).limits.secrets.allow(client_address(request))
    if wait:
        return Problem(429, f"Too many attempts: wait {wait:.0f} s.", {"Retry-After": str(int(wait) + 1)})
    return Problem(403, what)


def teach(request: Request) -> Response:
    ctx = ctx_of(request)
    keys = ctx.keys()
    key = request.query_params.get("key")
    if key is not None:
        if not _key_ok(request, key):
            raise _wrong(request, "wrong instructor key: open the instructor link `attn-practice "
                                  "host` printed.")
        if request.headers.get("sec-fetch-site", "") in ("cross-site", "same-site"):
            # another site's page sent the browser here: no sign-in without a click on our page
            return form_page(request, lambda csrf: pages.teach_confirm(csrf, key))
        return _signed_in(request, partial(_key_current, request, key))
    if is_instructor(request):
        return HTMLResponse(teach_page(teach_csrf(request)))
    return form_page(request, lambda csrf: pages.teach_sign_in(csrf, bool(keys.password_hash)), 403)


def _key_ok(request: Request, key: str) -> bool:
    """The instructor key, re-read from the store when the cached keys accept it: a key just
    rotated by `host rotate-key` (another process) opens nothing, not even for the cache's 2 s."""
    return ctx_of(request).keys().key_ok(key[:200]) and _key_current(request, key)


def _key_current(request: Request, key: str) -> bool:
    """`key` is the instructor key as the store has it now (not as cached)."""
    return ctx_of(request).keys(fresh=True).key_ok(key[:200])


def _signed_in(request: Request, still_ok: Callable[[], bool]) -> Response:
    """Sign the instructor in, then ask `still_ok` (the key or password, re-read) once more.

    A rotation (`host rotate-key`, `host set-password`: another process)
    writes the new secret, then ends every instructor session. A sign-in
    checked against the old secret just before it could make its session
    just after that end; asked again after the session is made, either the
    new secret is seen (and the session ended here) or the rotation's end
    comes after the session (and ends it there): none made with the old
    secret outlives the rotation.
    """
    response = RedirectResponse("/teach", status_code=303)  # the key leaves the address bar
    token = start_instructor_session(request, response)
    if not still_ok():
        ctx_of(request).store.end_session(hash_secret(token))
        raise _wrong(request, "the instructor key or password was changed just now: open the new "
                              "instructor link, or sign in with the new password.")
    return response


async def login(request: Request) -> Response:
    """POST /teach/login: the class password, or the key from the confirm page above."""
    form = await read_form(request, 4096)
    require_form_csrf(request, form)
    ctx = ctx_of(request)
    key = form.get("key")
    if key is not None:
        ok = await run_in_threadpool(_key_ok, request, key)
        still_ok = partial(_key_current, request, key)
    else:
        password = form.get("password", "")[:200]
        checked = ctx.keys().password_hash
        ok = await ctx.limits.password_ok(  # the rate limit first, then scrypt
            client_address(request), lambda: password_ok(password, checked))
        if ok:  # a password just replaced by `host set-password` (another process) opens nothing
            cached, checked = checked, await run_in_threadpool(lambda: ctx.keys(fresh=True).password_hash)
            if checked != cached:
                ok = await run_in_threadpool(password_ok, password, checked)

        def still_ok() -> bool:
            return ctx.keys(fresh=True).password_hash == checked
    if not ok:
        raise _wrong(request, "wrong instructor key." if key is not None else "wrong password.")
    return await run_in_threadpool(_signed_in, request, still_ok)


async def logout(request: Request) -> Response:
    """POST /teach/logout (the page's token in a form field): this browser only."""
    form = await read_form(request, 4096)
    same_origin(request)
    if not (await run_in_threadpool(is_instructor, request)
            and same(form.get("csrf", ""), teach_csrf(request))):
        raise Problem(403, "this sign-out did not come from the instructor page: reload it.")
    response = HTMLResponse(pages.teach_signed_out())
    await run_in_threadpool(end_session, request, response, SessionKind.INSTRUCTOR)
    return response


def class_api(request: Request) -> Response:
    require_instructor(request)
    ctx = ctx_of(request)
    keys = ctx.keys()
    picture = class_picture(ctx.store, ctx.catalog)
    base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
    picture["join"] = {"link": f"{base}/join/{keys.join_code}", "open": keys.joining_open,
                       "ask_student_id": keys.ask_student_id}
    picture["queue"] = {"waiting": len(ctx.queue)}
    picture["id_conflicts"] = claims.id_conflicts(ctx.store)
    picture["lti"] = lti_teach.class_field(ctx.store)  # the LMS gradebook (LTI 1.3), None without one
    return JSONResponse(picture)


def learner_api(request: Request) -> Response:
    require_instructor(request)
    ctx = ctx_of(request)
    lid = request.path_params["learner"]
    data = drilldown(ctx.store, ctx.catalog, lid) if len(lid) <= 64 else None
    if data is None:
        raise Problem(404, "no such learner.")
    return JSONResponse(data)


async def act(request: Request) -> Response:
    """POST /teach/api/{action}: rotate-join, joining, reissue, settle-id, student-id,
    sign-out-everywhere."""
    await run_in_threadpool(require_instructor, request)
    ctx = ctx_of(request)
    require_csrf(request, teach_csrf(request))
    body = await read_json(request, 4096)
    name = request.path_params["action"]
    store = ctx.store

    def run() -> dict[str, object]:
        if name == "rotate-join":
            store.set_setting(Setting.JOIN_CODE.value, new_join_code())
        elif name == "joining":
            if not isinstance(body.get("open"), bool):
                raise Problem(400, "'open' must be true or false.")
            store.set_setting(Setting.JOINING_OPEN.value, "1" if body["open"] else "0")
        elif name == "reissue":
            lid = body.get("learner")
            if not isinstance(lid, str) or len(lid) > 64 or store.learner(lid) is None:
                raise Problem(404, "no such learner.")
            secret = new_secret()
            store.reissue_resume(lid, hash_secret(secret))
            store.end_sessions(SessionKind.LEARNER, lid)  # whoever had the old link is out
            store.record_event(lid, EventKind.REISSUED.value, {})
            base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
            return {"resume_link": f"{base}/resume/{secret}"}
        elif name in ("settle-id", "student-id"):
            _student_ids(store, name, body)
        elif name == "sign-out-everywhere":
            return {"ok": True, "ended": store.end_sessions(SessionKind.INSTRUCTOR)}
        else:
            raise Problem(404, f"no action {name[:40]!r}")
        store.record_event("", EventKind.SETTINGS.value, {})
        return {"ok": True}

    out = await run_in_threadpool(run)
    ctx.keys(fresh=True)
    response = JSONResponse(out)
    if name == "sign-out-everywhere":
        response.delete_cookie(TEACH_COOKIE, path="/")
    return response


def _student_ids(store: Any, name: str, body: dict[str, Any]) -> None:
    """settle-id {conflict, give_to: holder|claimant}; student-id {learner, student_id ("" clears)}."""
    if name == "settle-id":
        try:
            give_to = claims.GiveTo(body.get("give_to"))
        except ValueError:
            raise Problem(400, "'give_to' must be \"holder\" or \"claimant\".") from None
        cid = body.get("conflict")
        if not isinstance(cid, str) or len(cid) > 64 or not claims.settle(store, cid, give_to):
            raise Problem(404, "no such open clash (settled already?).")
        return
    lid = body.get("learner")
    if not isinstance(lid, str) or len(lid) > 64 or store.learner(lid) is None:
        raise Problem(404, "no such learner.")
    student_id = text_field(body, "student_id", max_len=64, required=False)
    if not claims.readable_id(student_id):
        raise Problem(400, "that student id is only spaces or invisible characters.")
    try:
        store.set_student_id(lid, student_id)
    except StudentIdTaken:
        raise Problem(409, f"another learner holds the student id {student_id!r}: change or "
                           "clear theirs first.") from None


def export_file(request: Request) -> Response:
    require_instructor(request)
    ctx = ctx_of(request)
    try:
        fmt = export.ExportFormat(request.path_params["fmt"])
    except ValueError:
        raise Problem(404, "export as export.json or export.csv.") from None
    text = export.export_text(ctx.store, ctx.course, fmt)
    media = "text/csv; charset=utf-8" if fmt is export.ExportFormat.CSV else "application/json"
    return Response(text, media_type=media,
                     headers={"Content-Disposition": f'attachment; filename="class.{fmt.value}"'})


async def events(request: Request) -> Response:
    await run_in_threadpool(require_instructor, request)
    ctx = ctx_of(request)
    sub = ctx.live.subscribe(None)
    if sub is None:
        raise Problem(503, "too many open pages on this server.", {"Retry-After": "5"})
    return StreamingResponse(ctx.live.stream(sub, request.is_disconnected),
                             media_type="text/event-stream; charset=utf-8",
                             headers={"X-Accel-Buffering": "no"})
