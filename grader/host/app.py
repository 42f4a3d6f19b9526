"""The ASGI app: routes, middleware (security headers) and lifespan; nothing else.

Views live one module per page or API group (`views_join`, `views_learner`,
`views_teach`, `ops`); the app maps refusals (`Problem`), a database that is
away (`StoreUnavailable`: 503 with Retry-After) and anything unexpected (500,
one line, no traceback to the client) to the same response shape.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from attn_practice.grader.host import ops, ops_log, views_join, views_learner, views_teach
from attn_practice.grader.host.context import HostContext
from attn_practice.grader.host.guard import RequestGuard
from attn_practice.grader.host.lti import routes as lti_routes
from attn_practice.grader.host.static import favicon, static
from attn_practice.grader.host.store.base import StoreUnavailable
from attn_practice.grader.host.web import Problem, SecurityHeaders, problem_response

GET, POST = ["GET"], ["POST"]


def routes() -> list[Route]:
    L, T = views_learner, views_teach
    return [
        Route("/", L.page, methods=GET),
        Route("/step/{step}", L.page, methods=GET),
        Route("/static/{name}", static, methods=GET),
        Route("/favicon.ico", favicon, methods=GET),
        Route("/join/{code}", views_join.join_page, methods=GET),
        Route("/join/{code}", views_join.join, methods=POST),
        Route("/resume/{secret}", views_join.resume, methods=GET),
        Route("/resume/{secret}", views_join.resume_confirmed, methods=POST),
        Route("/signout", views_join.sign_out, methods=POST),
        Route("/api/summary", L.summary, methods=GET),
        Route("/api/events", L.events, methods=GET),
        Route("/api/queue", L.queue_position, methods=GET),
        Route("/api/step/{step}", L.step_page, methods=GET),
        Route("/api/step/{step}/versions", L.versions, methods=GET),
        Route("/api/step/{step}/{action}", L.action, methods=POST),
        Route("/api/version/{version}", L.version, methods=GET),
        Route("/api/widget/{name}", L.widget, methods=GET),
        Route("/teach", T.teach, methods=GET),
        Route("/teach/login", T.login, methods=POST),
        Route("/teach/logout", T.logout, methods=POST),
        Route("/teach/api/class", T.class_api, methods=GET),
        Route("/teach/api/events", T.events, methods=GET),
        Route("/teach/api/learner/{learner}", T.learner_api, methods=GET),
        Route("/teach/api/{action}", T.act, methods=POST),
        Route("/teach/export.{fmt:str}", T.export_file, methods=GET),
        Route("/healthz", ops.healthz, methods=GET),
        Route("/readyz", ops.readyz, methods=GET),
        Route("/metrics", ops.metrics, methods=GET),
        *lti_routes.routes(),  # cross-site by design: not behind the same-origin check (CONTRACT §8)
    ]


async def _problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return problem_response(request, exc.status, exc.message, exc.headers)


async def _unavailable(request: Request, exc: Exception) -> Response:
    wait = getattr(exc, "retry_after", 2.0)
    return problem_response(request, 503, "The class database is not reachable right now; your "
                            "page retries by itself. Nothing you saved before is lost.",
                            {"Retry-After": str(max(1, int(wait)))})


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "no such page.", 405: "this method is not served here."}.get(
        exc.status_code, str(exc.detail))
    return problem_response(request, exc.status_code, message)


async def _bug(request: Request, exc: Exception) -> Response:
    print(f"attn-practice host: a request failed ({type(exc).__name__}: {exc}); the server goes "
          "on. This is a bug in attn-practice.", file=sys.stderr)
    return problem_response(request, 500, "the server failed to answer this request (a bug in "
                            "attn-practice, not your doing); nothing saved before was lost.")


def build_app(ctx: HostContext) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await ctx.live.start()
        lti_sender = lti_routes.start(ctx)
        try:
            yield
        finally:
            lti_sender.stop()
            await ctx.live.stop()

    app = Starlette(routes=routes(), middleware=[Middleware(ops_log.OpsLogMiddleware), Middleware(SecurityHeaders), Middleware(RequestGuard)], lifespan=lifespan,
                    exception_handlers={Problem: _problem, StoreUnavailable: _unavailable,
                                        HTTPException: _http, Exception: _bug})
    app.state.ctx = ctx
    return app
