"""The operator's log: one line per request (by route class, never the URL) and per check,
with no secret, name or learner code in it; the counters behind /metrics.

The middleware runs in a real Starlette app through its test client.
"""

from __future__ import annotations

import io
import re

import pytest

pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")

from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from attn_practice.grader.host import ops_log  # noqa: E402

SECRET_CODE = "JoinCodeSecret123"
SECRET_KEY = "InstructorKeySecret456"
LEARNER_ID = "LearnerIdSecret789"
CODE = "def dot_scores(Q, K):\n    return Q @ K.T  # SECRET-CODE-LINE\n"


@pytest.fixture
def captured():
    stream = io.StringIO()
    handler = ops_log.configure(stream)
    try:
        yield stream
    finally:
        ops_log.log.removeHandler(handler)


def _app(stats: ops_log.OpsStats) -> TestClient:
    async def join(request):
        return PlainTextResponse("hello " + request.path_params["code"])

    async def save(request):
        return JSONResponse({"saved": True})

    async def away(request):
        return JSONResponse({"error": "database away"}, status_code=503, headers={"Retry-After": "2"})

    app = Starlette(routes=[Route("/join/{code}", join), Route("/api/steps/{step}/save", save, methods=["POST"]),
                            Route("/teach", away)])
    return TestClient(ops_log.OpsLogMiddleware(app, stats))


def test_one_line_per_request_by_route_class_never_its_url(captured):
    stats = ops_log.OpsStats()
    client = _app(stats)
    assert client.get(f"/join/{SECRET_CODE}").status_code == 200
    assert client.post("/api/steps/step1/save", json={"content": CODE}).status_code == 200
    assert client.get(f"/teach?key={SECRET_KEY}").status_code == 503
    assert client.get(f"/nothing/{SECRET_CODE}").status_code == 404
    lines = captured.getvalue().splitlines()
    assert len(lines) == 4
    assert 'route="GET /join/{code}" status=200 outcome=ok' in lines[0]
    assert 'route="POST /api/steps/{step}/save" status=200' in lines[1]
    assert 'route="GET /teach" status=503 outcome=unavailable' in lines[2]
    assert 'route="GET unmatched" status=404 outcome=refused' in lines[3]
    text = captured.getvalue()
    for secret in (SECRET_CODE, SECRET_KEY, "SECRET-CODE-LINE", "step1"):
        assert secret not in text
    assert all(re.search(r"attn-practice\[\d+\] event=request ", ln) for ln in lines)
    assert re.search(r" ms=\d+\.\d", lines[0])


def test_a_check_line_has_its_step_verdict_and_times_but_no_code_or_learner_id(captured):
    stats = ops_log.OpsStats()
    result = {"report": {"steps": [{"id": "step2", "status": "failed", "diagnoses": ["no-scale"],
                                    "tests": [{"name": "t", "status": "failed", "message": CODE}]}]},
              "worked_html": f"<pre>{CODE}</pre>", "seconds": 1.25}
    ops_log.log_check(learner_id=LEARNER_ID, step="step2", result=result, wait=0.5, runner="dask",
                      stats=stats)
    ops_log.log_check(learner_id=LEARNER_ID, step="step2",
                      result={"report": {"steps": [], "error": "internal grader error"}, "seconds": 0.0,
                              "grader_failed": True}, wait=0.0, runner="local", stats=stats)
    first, second = captured.getvalue().splitlines()
    tag = ops_log.learner_tag(LEARNER_ID)
    assert f"event=check learner={tag} step=step2 status=failed diagnoses=1 wait_ms=500.0 run_ms=1250.0 runner=dask" in first
    assert "status=grader-failed" in second
    assert LEARNER_ID not in captured.getvalue() and "SECRET-CODE-LINE" not in captured.getvalue()
    assert ops_log.learner_tag("other") != tag


def test_database_changes_are_logged_once_each_without_the_password(captured, tmp_path):
    stats = ops_log.OpsStats()
    ops_log.log_database(False, "postgresql://u:***@db/class", "OperationalError", stats)
    assert stats.database_up == 0
    ops_log.log_database(True, "postgresql://u:***@db/class", stats=stats)
    assert stats.database_up == 1
    lines = captured.getvalue().splitlines()
    assert "state=away" in lines[0] and "state=back" in lines[1]

    psycopg = pytest.importorskip("psycopg")
    del psycopg
    from attn_practice.grader.host.store.postgres import PostgresStore

    store = PostgresStore.__new__(PostgresStore)  # only the URL scrubbing, no connection
    store.url = "postgresql://alice:hunter2@db.example/class?sslmode=require&password=hunter3"
    scrubbed = store._safe_url()
    assert "hunter2" not in scrubbed and "hunter3" not in scrubbed and "alice" in scrubbed


def test_prometheus_text_counts_requests_and_checks(captured):
    stats = ops_log.OpsStats()
    client = _app(stats)
    client.get("/join/x")
    client.get("/join/y")
    client.get("/teach")
    ops_log.log_check(learner_id="a", step="step1", result={"report": {"steps": [
        {"id": "step1", "status": "passed"}]}, "seconds": 0.7}, wait=0.0, runner="local", stats=stats)
    text = stats.prometheus()
    assert 'attnp_requests_total{route="GET /join/{code}",outcome="ok"} 2' in text
    assert 'attnp_requests_total{route="GET /teach",outcome="unavailable"} 1' in text
    assert 'attnp_check_results_total{status="passed"} 1' in text
    assert 'attnp_check_run_seconds_bucket{le="0.5"} 0' in text
    assert 'attnp_check_run_seconds_bucket{le="1.0"} 1' in text
    assert 'attnp_check_run_seconds_bucket{le="+Inf"} 1' in text
    assert "attnp_check_run_seconds_count 1" in text and "attnp_database_up 1" in text
    for ln in text.splitlines():  # every sample line is `name{labels} value` or `name value`
        assert ln.startswith("#") or re.fullmatch(r'[a-z_]+(\{.*\})? [0-9.e+-]+', ln), ln
