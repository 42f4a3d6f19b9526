"""The instructor page's LTI panel: the score outbox's state and the roster import."""

from __future__ import annotations

import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from attn_practice.grader.host import session
from attn_practice.grader.host.lti import registry
from attn_practice.grader.host.lti.http import PlatformError
from attn_practice.grader.host.lti.roster import import_roster
from attn_practice.grader.host.session import ctx_of, require_csrf, require_instructor
from attn_practice.grader.host.store.sql_lti import OutboxScore

SHOWN = 20


def _teach_token(request: Request) -> str:
    """The instructor page's CSRF token (bound to its session where sessions are server-side)."""
    per_session = getattr(session, "teach_csrf", None)
    return per_session(request) if per_session else ctx_of(request).keys().teach_csrf()  # type: ignore[attr-defined]


def _row(score: OutboxScore, names: dict[str, str]) -> dict[str, Any]:
    return {"learner": names.get(score.learner_id, "?"), "score": score.score_given, "max": score.score_max,
            "state": score.state.value, "attempts": score.attempts, "answer": score.answer,
            "queued_at": score.created, "sent_at": score.sent,
            "next_try_in": max(0.0, round(score.next_try - time.time(), 1))}


def status(store: Any) -> dict[str, Any]:
    """What the panel shows (also a field a class API may embed)."""
    names = {lr.id: lr.display_name for lr in store.learners()}
    counts = store.lti_score_counts()
    return {"platforms": [p.issuer for p in registry.platforms(store)],
            "scores": {s: counts.get(s, 0) for s in ("pending", "failing", "sent")},
            "unsent": [_row(s, names) for s in store.unsent_lti_scores(SHOWN)],
            "sent": [_row(s, names) for s in store.recent_sent_lti_scores(5)],
            "courses": [{"title": c.title or c.context_id, "roster": bool(c.memberships_url)}
                        for c in store.lti_contexts()]}


def class_field(store: Any) -> dict[str, Any] | None:
    """The `lti` field of /teach/api/class: the panel's data, or None when no LMS is registered."""
    return status(store) if store.get_setting(registry.PLATFORMS) else None


def lti_status(request: Request) -> Response:
    require_instructor(request)
    return JSONResponse(status(ctx_of(request).store))


async def roster(request: Request) -> Response:
    def run() -> dict[str, Any]:
        require_instructor(request)
        require_csrf(request, _teach_token(request))
        store = ctx_of(request).store
        done, failed = [], []
        for context in store.lti_contexts():
            if not context.memberships_url:
                continue
            try:
                got = import_roster(store, context)
                done.append({"course": got.context, "members": got.members, "added": got.added})
            except PlatformError as exc:
                failed.append({"course": context.title or context.context_id, "error": str(exc)})
        if not done and not failed:
            failed.append({"course": "", "error": "no course has launched this class with a roster "
                           "(Names and Roles) yet: launch it once as the instructor from the course."})
        return {"imported": done, "failed": failed}

    return JSONResponse(await run_in_threadpool(run))
