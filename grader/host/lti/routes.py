"""What the app wires for LTI: its routes and the score sender's life (started with the app)."""

from __future__ import annotations

from typing import Any

from starlette.routing import Route

from attn_practice.grader.host.lti import teach_views, views
from attn_practice.grader.host.lti.sender import Sender


def routes() -> list[Route]:
    return [
        Route("/lti/jwks", views.jwks, methods=["GET"]),
        Route("/lti/login", views.login, methods=["GET", "POST"]),
        Route("/lti/launch", views.launch, methods=["POST"]),
        Route("/teach/api/lti", teach_views.lti_status, methods=["GET"]),
        Route("/teach/api/lti/roster", teach_views.roster, methods=["POST"]),
    ]


def start(ctx: Any) -> Sender:
    """The score sender of this process (stop it when the app stops)."""
    return Sender(ctx.store, ctx.course).start()
