"""Checks for many learners: the fair queue's order and bounds, the real pool against hostile code.

The order tests drive `FairQueue` with a runner that finishes a check only
when the test says so (the queue, not the engine, is under test there); the
hostile-code tests run the real local pool and sandbox.
"""

from __future__ import annotations

import threading
import time

import pytest
from test_host_support import SUBMISSIONS, hosted_class, implementation

from attn_practice.grader.host.auth import RateLimiter
from attn_practice.grader.host.checks.base import CheckRequest
from attn_practice.grader.host.checks.queue import AlreadyChecking, FairQueue
from attn_practice.grader.host.context import Limits


class GatedRunner:
    """A CheckRunner whose checks end when `release()` is called; it records the order they ran."""

    capacity = 1

    def __init__(self) -> None:
        self.order: list[str] = []
        self.gate = threading.Semaphore(0)
        self.started = threading.Event()

    def run(self, request: CheckRequest) -> dict:
        self.order.append(request.learner_id)
        self.started.set()
        self.gate.acquire(timeout=30)
        return {"report": {"submission": "", "steps": []}, "worked_html": "", "seconds": 0.0}

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        pass


def req(learner: str) -> CheckRequest:
    return CheckRequest(learner, "step1", {})


def test_one_check_per_learner_and_learners_take_turns():
    runner = GatedRunner()
    q = FairQueue(runner)
    try:
        first = q.submit(req("a"))
        assert runner.started.wait(10)
        with pytest.raises(AlreadyChecking):
            q.submit(req("a"))  # a's check is running: a second waits for nobody
        waiting = [q.submit(req(x)) for x in ("b", "c", "d")]
        assert [q.position(x) for x in ("a", "b", "c", "d", "e")] == [0, 1, 2, 3, None]
        runner.gate.release()
        first.result(timeout=10)
        # a checks again: behind everyone who was already waiting
        again = q.submit(req("a"))
        assert q.position("a") == 3
        for _ in range(4):
            runner.gate.release()
        for f in [*waiting, again]:
            f.result(timeout=10)
        assert runner.order == ["a", "b", "c", "d", "a"]
        stats = q.stats()
        assert stats.done == 5 and stats.waiting == 0 and stats.running == 0
    finally:
        for _ in range(10):
            runner.gate.release()
        q.close()


def test_a_closed_queue_answers_waiting_checks_as_grader_failures():
    runner = GatedRunner()
    q = FairQueue(runner)
    q.submit(req("a"))
    assert runner.started.wait(10)
    waiting = q.submit(req("b"))
    q.close()
    assert waiting.result(timeout=10)["grader_failed"] is True
    runner.gate.release()


def test_rate_limiter_allows_a_burst_then_says_how_long_to_wait():
    limiter = RateLimiter(burst=2, per_second=0.5)
    assert limiter.allow("x") == 0 and limiter.allow("x") == 0
    wait = limiter.allow("x")
    assert 0 < wait <= 2.0
    assert limiter.allow("y") == 0  # per key


@pytest.mark.slow
def test_checking_too_often_gets_a_clear_message(tmp_path):
    limits = Limits(checks=RateLimiter(burst=1, per_second=0.001))
    with hosted_class(tmp_path / "c", limits=limits) as h:
        b = h.browser().join("Eager")
        b.save("step1", implementation("step1", "correct_einsum"), base="")
        assert b.check("step1").status_code == 200
        r = b.check("step1")
        assert r.status_code == 429 and "checking very often" in r.json()["error"]
        assert int(r.headers["retry-after"]) >= 1


@pytest.mark.slow
def test_a_hostile_learner_costs_only_their_own_check(tmp_path):
    """An infinite loop and a fork storm, checked beside an honest learner on a pool of 2."""
    with hosted_class(tmp_path / "c", jobs=2) as h:
        hang = h.browser().join("Hang")
        storm = h.browser().join("Storm")
        honest = h.browser().join("Honest")
        hang.save("step1", (SUBMISSIONS / "attack_hang" / "step1_scores.py").read_text(), base="")
        storm.save("step1", (SUBMISSIONS / "attack_fork_storm" / "step1_scores.py").read_text(), base="")
        honest.save("step1", implementation("step1", "correct_einsum"), base="")
        results: dict[str, dict] = {}

        def check(name: str, b) -> None:
            results[name] = b.check("step1").json()

        threads = [threading.Thread(target=check, args=(n, b))
                   for n, b in (("hang", hang), ("storm", storm), ("honest", honest))]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        assert time.monotonic() - t0 < 240
        assert results["honest"]["status"] == "passed", results["honest"]
        assert results["hang"]["status"] == "timeout"
        assert results["storm"]["status"] in ("passed", "failed", "error")
        assert h.browser().client.get("/readyz").json() == {"ready": True}
        # the pool is still usable afterwards
        assert honest.check("step1").json()["status"] == "passed"


def test_the_page_learns_its_place_in_the_queue(tmp_path):
    """Two learners' checks on one busy checker: the second is told it waits, then gets its result."""
    from starlette.testclient import TestClient
    from test_host_support import BASE, Browser, Hosted

    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.host.app import build_app
    from attn_practice.grader.host.auth import ensure_class_settings
    from attn_practice.grader.host.context import HostContext
    from attn_practice.grader.host.store.factory import open_store

    store = open_store(None, tmp_path)
    ensure_class_settings(store)
    runner = GatedRunner()
    ctx = HostContext(store, runner, load_catalog())
    app = build_app(ctx)
    hosted = Hosted(ctx, app, tmp_path)
    try:
        with TestClient(app, base_url=BASE):
            a = Browser(TestClient(app, base_url=BASE), hosted).join("First")
            b = Browser(TestClient(app, base_url=BASE), hosted).join("Second")
            answers = {}
            ta = threading.Thread(target=lambda: answers.setdefault("a", a.check("step1")))
            ta.start()
            assert runner.started.wait(10)
            tb = threading.Thread(target=lambda: answers.setdefault("b", b.check("step1")))
            tb.start()
            deadline = time.monotonic() + 10
            while b.client.get("/api/queue").json()["position"] != 1:
                assert time.monotonic() < deadline, "B's check never showed as waiting"
                time.sleep(0.05)
            assert a.client.get("/api/queue").json()["position"] == 0  # running
            r = b.check("step1")
            assert r.status_code == 429 and "still running" in r.json()["error"]
            runner.gate.release()
            runner.gate.release()
            ta.join(10)
            tb.join(10)
            assert answers["b"].status_code == 200 and "waited" in answers["b"].json()
    finally:
        for _ in range(4):
            runner.gate.release()
        ctx.close()


def test_a_refund_gives_back_what_a_grader_failure_cost():
    limiter = RateLimiter(burst=1, per_second=0.001)
    assert limiter.allow("x") == 0
    assert limiter.allow("x") > 0
    limiter.refund("x")
    assert limiter.allow("x") == 0
