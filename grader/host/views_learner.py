"""The learner's page and its API: serve's page and JSON shapes, on the learner's stored work.

Every handler finds the learner from the session cookie and passes only
that learner to `Lesson`; nothing in a request names a learner. A step is
named by id (step1..step8), a version by its random id, looked up within the
learner's own rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse

from attn_practice.grader.host import pages, widgets_hosted
from attn_practice.grader.host.checks.queue import AlreadyChecking
from attn_practice.grader.host.lesson import BadInput, Conflict, EventKind, NotFound
from attn_practice.grader.host.limits import too_busy
from attn_practice.grader.host.session import (
    ctx_of,
    current_learner,
    learner_secret,
    require_csrf,
    require_learner,
)
from attn_practice.grader.host.static import lesson_page
from attn_practice.grader.host.store.base import Learner
from attn_practice.grader.host.web import MAX_SAVE_BODY, Problem, read_json

QUEUE_TICK = 0.5


def page(request: Request) -> Response:
    """The lesson page for a signed-in learner; the landing page for anyone else."""
    learner = current_learner(request)
    if learner is None:
        return HTMLResponse(pages.landing())
    step = request.path_params.get("step")
    if step is not None:
        try:
            ctx_of(request).lesson.step(step)
        except NotFound as exc:
            raise Problem(404, str(exc)) from None
    csrf = ctx_of(request).keys().learner_csrf(learner_secret(request))
    return HTMLResponse(lesson_page(csrf))


def summary(request: Request) -> Response:
    learner = require_learner(request)
    return JSONResponse(ctx_of(request).lesson.summary(learner))


def step_page(request: Request) -> Response:
    learner = require_learner(request)
    lesson = ctx_of(request).lesson
    return JSONResponse(lesson.page(learner, _step(request)))


def versions(request: Request) -> Response:
    learner = require_learner(request)
    return JSONResponse({"versions": ctx_of(request).lesson.history(learner, _step(request))})


def version(request: Request) -> Response:
    learner = require_learner(request)
    vid = request.path_params["version"]
    v = ctx_of(request).store.version(learner.id, vid) if len(vid) <= 64 else None
    if v is None:
        raise Problem(404, "no such version of yours.")
    return JSONResponse({"id": v.id, "step": v.step, "content": v.content, "created": v.created})


def queue_position(request: Request) -> Response:
    learner = require_learner(request)
    q = ctx_of(request).queue
    return JSONResponse({"position": q.position(learner.id), "waiting": len(q)})


def _step(request: Request) -> Any:
    try:
        return ctx_of(request).lesson.step(request.path_params["step"])
    except NotFound as exc:
        raise Problem(404, str(exc)) from None


async def action(request: Request) -> Response:
    """POST /api/step/{step}/{action}: save, check, hint, reset, restore."""
    ctx = ctx_of(request)
    name = request.path_params["action"]
    if name not in ("save", "check", "hint", "reset", "restore"):
        raise Problem(404, f"no action {name[:40]!r}")
    learner = await run_in_threadpool(require_learner, request)
    require_csrf(request, ctx.keys().learner_csrf(learner_secret(request)))
    ex = _step(request)
    body = await read_json(request, MAX_SAVE_BODY if name == "save" else 4096)
    try:
        if name == "check":
            return await _check(request, learner, ex)
        return await run_in_threadpool(_change, request, learner, ex, name, body)
    except BadInput as exc:
        raise Problem(400, str(exc)) from None
    except NotFound as exc:
        raise Problem(404, str(exc)) from None


def _change(request: Request, learner: Learner, ex: Any, name: str, body: dict[str, Any]) -> Response:
    ctx = ctx_of(request)
    lesson = ctx.lesson
    wait = ctx.limits.saves.allow(learner.id)  # every write: save, restore, reset, hint
    if wait:
        doing = "asking for hints" if name == "hint" else "saving"
        raise Problem(429, f"You are {doing} very often: wait {wait:.1f} s (nothing was lost: "
                           "your text is still in the editor).", {"Retry-After": str(int(wait) + 1)})
    if name == "save":
        got = lesson.save(learner, ex, body.get("content"), body.get("base"),
                          force=body.get("force") is True)
        if isinstance(got, Conflict):
            return JSONResponse({"error": f"{ex.file} changed (in another tab or on another computer) "
                                          "since this page loaded it.",
                                 "disk_content": got.text, "disk_version": got.version}, status_code=409)
        ctx.store.record_event(learner.id, EventKind.SAVED.value, {"step": ex.id, "version": got.id})
        return JSONResponse({"version": got.id, "saved": True})
    if name == "hint":
        out = lesson.hint(learner, ex)
        ctx.store.record_event(learner.id, EventKind.HINT.value, {"step": ex.id})
        return JSONResponse(out)
    if name == "reset":
        out = lesson.reset(learner, ex)
    else:
        v = lesson.restore(learner, ex, body.get("version"))
        out = {"content": v.content, "version": v.id}
    ctx.store.record_event(learner.id, EventKind.SAVED.value, {"step": ex.id, "version": out["version"]})
    return JSONResponse(out)


async def _check(request: Request, learner: Learner, ex: Any) -> Response:
    ctx = ctx_of(request)
    wait = ctx.limits.checks.allow(learner.id)
    if wait:  # retry_after: the page keeps the last report shown and checks again by itself then
        return JSONResponse({"error": f"You are checking very often: the next check can run in "
                                      f"{int(wait) + 1} s (your file is saved; the last report stays).",
                             "retry_after": int(wait) + 1, "step": ex.id}, status_code=429,
                            headers={"Retry-After": str(int(wait) + 1)})
    check_request, version_id = await run_in_threadpool(ctx.lesson.check_request, learner, ex)
    # the page asks for its widgets as soon as the report shows: they come with it (issue 40)
    if widgets_hosted.with_check(ctx.runner, check_request.files):
        check_request = replace(check_request, extra={**check_request.extra, "widgets": True})
    try:
        future = ctx.queue.submit(check_request)
    except AlreadyChecking:
        if check_request.extra.get("widgets"):
            widgets_hosted.from_check(check_request.files, None)
        raise Problem(429, "Your previous check is still running: its result will show here "
                           "when it is done.") from None
    position = ctx.queue.position(learner.id)
    ctx.live.tell_learner(learner.id, "queue", {"step": ex.id, "position": position,
                                                "estimate": ctx.queue.estimate(position)})
    # later places come from the queue itself, when they change (checks.notify), not on a tick
    result, answer = None, None
    try:
        try:
            result = await asyncio.wrap_future(future)
        finally:  # kept, and whoever waits for these widgets goes on (`widgets_hosted.with_check`)
            if check_request.extra.get("widgets"):
                widgets_hosted.from_check(check_request.files, result)
        ctx.live.tell_learner(learner.id, "queue", {"step": ex.id, "position": None})
        answer = await run_in_threadpool(_finish, ctx, learner, ex, result, version_id)
    finally:  # the stored row goes only once the answer is: else it runs again at the next start
        ctx.queue.settled(future, stored=answer is not None and bool(answer.get("counted")))
    return JSONResponse(answer)


def _finish(ctx: Any, learner: Learner, ex: Any, result: Any, version_id: str) -> dict[str, Any]:
    """The check's answer, stored as the learner's latest report (in a worker thread)."""
    answer = ctx.lesson.check_answer(learner, ex, result, version_id)
    if answer.get("counted"):
        ctx.store.record_event(learner.id, EventKind.CHECKED.value, {"step": ex.id, "status": answer["status"]})
    else:  # the grader failed: not the learner's check to pay for (CONTRACT §4.4)
        ctx.limits.checks.refund(learner.id)
    return answer


async def events(request: Request) -> Response:
    ctx = ctx_of(request)
    learner = await run_in_threadpool(require_learner, request)
    streams = ctx.limits.streams
    if not streams.enter(learner.id):  # a few tabs, not thousands of streams
        raise too_busy(f"You have {streams.per_key} pages of this class open already: close one "
                       "(this one updates when you reload it).", 15)
    sub = ctx.live.subscribe(learner.id)
    if sub is None:
        streams.leave(learner.id)
        raise Problem(503, "too many open pages on this server; retrying soon.", {"Retry-After": "5"})

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in ctx.live.stream(sub, request.is_disconnected):
                yield chunk
        finally:
            streams.leave(learner.id)

    return StreamingResponse(body(), media_type="text/event-stream; charset=utf-8",
                             headers={"X-Accel-Buffering": "no"})


async def widget(request: Request) -> Response:
    """A widget on the learner's code: one call in flight per learner (the next is 429 at once),
    computed on the widget threads, never the server's shared pool (a slow answer stalls no one)."""
    ctx = ctx_of(request)
    learner = await run_in_threadpool(require_learner, request)
    name, query = request.path_params["name"], dict(request.query_params)
    try:
        out = await ctx.limits.widget(learner.id, widgets_hosted.answer, ctx.lesson, ctx.runner,
                                      learner, name, query)
    except widgets_hosted.WidgetInputError as exc:
        raise Problem(400, str(exc)) from None
    except NotFound as exc:
        raise Problem(404, str(exc)) from None
    return JSONResponse(out)
