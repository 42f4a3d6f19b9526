"""LTI as another authenticator: a verified launch becomes the same session the app already uses.

The one place launches touch sessions (JupyterHub's `ltiauthenticator`
pattern): `session.start_learner_session` / `start_instructor_session` make a
fresh server-side session (no fixation), exactly as the join form and the
instructor key do, so the §7 rules (CSRF, cross-learner, sign-out
everywhere) hold for LTI sessions unchanged. Store writes: call from a thread.

A tree from before server-side sessions lacks those two functions; then a
launch signs in the way a join did (the learner's resume secret reissued as
the cookie, the instructor's HMAC cookie).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host import auth, session
from attn_practice.grader.host.store.base import Learner, StudentIdTaken


def sign_in_learner(request: Request, response: Response, learner: Learner) -> None:
    start = getattr(session, "start_learner_session", None)
    if start is not None:
        start(request, response, learner)
        return
    secret = auth.new_secret()
    session.ctx_of(request).store.reissue_resume(learner.id, auth.hash_secret(secret))
    session.set_cookie(request, response, auth.LEARNER_COOKIE, secret)


def sign_in_instructor(request: Request, response: Response) -> None:
    start = getattr(session, "start_instructor_session", None)
    if start is not None:
        start(request, response)
        return
    keys = session.ctx_of(request).keys()
    session.set_cookie(request, response, auth.TEACH_COOKIE, keys.teach_cookie())  # type: ignore[attr-defined]


def give_student_id(store: Any, learner: Learner, student_id: str) -> bool:
    """The LMS's student id for this learner, unless another learner of the class holds it (the
    instructor settles that; the launch goes on either way)."""
    try:
        store.set_student_id(learner.id, student_id)
    except StudentIdTaken as exc:
        store.record_id_conflict(student_id, learner.display_name, exc.holder_id)
        return False
    return True
