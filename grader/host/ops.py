"""For load balancers and operators (CONTRACT §7): /healthz, /readyz, /metrics.

/healthz answers 200 while the process runs; /readyz 200 only while the
database answers and the check workers are usable (else 503, with what is
wrong); /metrics, with the instructor key or cookie, the Prometheus text
format: queue length, checks running and done, check latency, active
learners (open pages), learners in the class.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from attn_practice.grader.host import ops_log
from attn_practice.grader.host.session import ctx_of, is_instructor
from attn_practice.grader.host.web import Problem


async def healthz(request: Request) -> Response:
    """On the event loop, never the shared thread pool: it answers however busy the pool is."""
    return PlainTextResponse("ok\n")


def readyz(request: Request) -> Response:
    ctx = ctx_of(request)
    problems = []
    try:
        if not ctx.store.ping():
            problems.append("database")
    except Exception:  # noqa: BLE001 - any failure to answer means not ready
        problems.append("database")
    if not ctx.runner.ready():
        problems.append("check workers")
    if problems:
        return JSONResponse({"ready": False, "unusable": problems}, status_code=503,
                            headers={"Retry-After": "2"})
    return JSONResponse({"ready": True})


def metrics(request: Request) -> Response:
    ctx = ctx_of(request)
    key = request.query_params.get("key", "")
    if not (is_instructor(request) or ctx.keys().key_ok(key[:200])):
        raise Problem(403, "metrics need the instructor key (?key=KEY).")
    s = ctx.queue.stats()
    active = len({sub.learner_id for sub in ctx.live.subscribers if sub.learner_id is not None})
    try:
        learners = ctx.store.learner_count()
    except Exception:  # noqa: BLE001 - metrics still answer while the database is away
        learners = -1
    lines = [
        ("attnp_check_queue_length", "gauge", "checks waiting for a worker", s.waiting),
        ("attnp_checks_running", "gauge", "checks running now", s.running),
        ("attnp_checks_total", "counter", "checks finished by this process", s.done),
        ("attnp_check_latency_seconds_sum", "counter", "total seconds from queued to done", s.latency_sum),
        ("attnp_check_latency_p95_seconds", "gauge", "p95 of recent checks, queued to done", s.latency_p95),
        ("attnp_check_wait_p95_seconds", "gauge", "p95 of recent checks' wait in the queue", s.wait_p95),
        ("attnp_active_learners", "gauge", "learners with the page open on this process", active),
        ("attnp_learners", "gauge", "learners in the class", learners),
        ("attnp_event_streams", "gauge", "open event streams on this process", len(ctx.live.subscribers)),
    ]
    guard = getattr(ctx, "connections", None)  # set by `host` (absent in process, under tests)
    if guard is not None:
        lines += [
            ("attnp_connections_waiting", "gauge", "connections waiting for a request's headers",
             len(guard.pending)),
            ("attnp_connections_evicted_total", "counter", "waiting connections closed for newer ones",
             guard.evicted),
            ("attnp_connections_timed_out_total", "counter", "connections closed for slow headers "
             "or bodies", guard.timed_out),
        ]
    text = "".join(f"# HELP {n} {h}\n# TYPE {n} {t}\n{n} {v}\n" for n, t, h, v in lines)
    text += ops_log.STATS.prometheus()
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")
