"""The instructor's page and API: the live class picture, a learner's drill-down, the actions.

Every route here needs the instructor cookie, given by the instructor link
(`/teach?key=KEY`, the key then leaves the address bar) or the class
password; wrong keys and passwords are rate limited per address.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from attn_practice.grader.host import export, pages
from attn_practice.grader.host.auth import (
    TEACH_COOKIE,
    Setting,
    hash_secret,
    new_join_code,
    new_secret,
    password_ok,
)
from attn_practice.grader.host.class_view import class_picture, drilldown
from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.session import (
    FORM_COOKIE,
    ctx_of,
    is_instructor,
    require_csrf,
    require_form_csrf,
    require_instructor,
    set_cookie,
)
from attn_practice.grader.host.static import teach_page
from attn_practice.grader.host.web import Problem, client_address, read_form, read_json

TEACH_COOKIE_DAYS = 30


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
        if not keys.key_ok(key[:200]):
            raise _wrong(request, "wrong instructor key: open the instructor link `attn-practice "
                                  "host` printed.")
        response = RedirectResponse("/teach", status_code=303)  # the key leaves the address bar
        set_cookie(request, response, TEACH_COOKIE, keys.teach_cookie(), days=TEACH_COOKIE_DAYS)
        return response
    if is_instructor(request):
        return HTMLResponse(teach_page(keys.teach_csrf()))
    csrf = request.cookies.get(FORM_COOKIE) or new_secret()
    response = HTMLResponse(pages.teach_sign_in(csrf, bool(keys.password_hash)), status_code=403)
    set_cookie(request, response, FORM_COOKIE, csrf, days=1)
    return response


async def login(request: Request) -> Response:
    form = await read_form(request, 4096)
    require_form_csrf(request, form)
    keys = ctx_of(request).keys()
    password = form.get("password", "")[:200]
    if not await ctx_of(request).limits.password_ok(  # the rate limit first, then scrypt
            client_address(request), lambda: password_ok(password, keys.password_hash)):
        raise _wrong(request, "wrong password.")
    response = RedirectResponse("/teach", status_code=303)
    set_cookie(request, response, TEACH_COOKIE, keys.teach_cookie(), days=TEACH_COOKIE_DAYS)
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
    """POST /teach/api/{action}: rotate-join, joining, reissue."""
    require_instructor(request)
    ctx = ctx_of(request)
    require_csrf(request, ctx.keys().teach_csrf())
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
            store.record_event(lid, EventKind.REISSUED.value, {})
            base = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
            return {"resume_link": f"{base}/resume/{secret}"}
        else:
            raise Problem(404, f"no action {name[:40]!r}")
        store.record_event("", EventKind.SETTINGS.value, {})
        return {"ok": True}

    out = await run_in_threadpool(run)
    ctx.keys(fresh=True)
    return JSONResponse(out)


def export_file(request: Request) -> Response:
    require_instructor(request)
    ctx = ctx_of(request)
    try:
        fmt = export.ExportFormat(request.path_params["fmt"])
    except ValueError:
        raise Problem(404, "export as export.json or export.csv.") from None
    text = export.render(export.class_reports(ctx.store, ctx.course), fmt)
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
