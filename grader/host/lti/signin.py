"""LTI as another authenticator: a verified launch becomes the same session the app already uses.

The one place launches touch sessions (JupyterHub's `ltiauthenticator`
pattern): `session.start_learner_session` / `start_instructor_session` make a
fresh server-side session (no fixation), exactly as the join form and the
instructor key do, so the §7 rules (CSRF, cross-learner, sign-out
everywhere) hold for LTI sessions unchanged. Store writes: call from a thread.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host import session
from attn_practice.grader.host.store.base import Learner


def sign_in_learner(request: Request, response: Response, learner: Learner) -> None:
    session.start_learner_session(request, response, learner)


def sign_in_instructor(request: Request, response: Response) -> None:
    session.start_instructor_session(request, response)
