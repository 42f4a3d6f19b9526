"""The fair queue's order under pressure: newer checks replace waiting ones, several accounts of
one person cannot push an honest learner back by more than one check each, and waiting learners
hear their place only when it moves (counted, never timed).

The runner here finishes a check only when the test says so: the queue, not the engine, is
under test (tests/test_host_checks.py drives the real pool).
"""

from __future__ import annotations

import threading
import time

import pytest
import test_host_checks

from attn_practice.grader.host.checks.base import CheckRequest
from attn_practice.grader.host.checks.notify import QueueNotifier, worth_telling
from attn_practice.grader.host.checks.queue import AlreadyChecking, FairQueue


class GatedRunner(test_host_checks.GatedRunner):
    """Checks end when `gate` is released; records whose check started (and its code), in order."""

    def __init__(self, capacity: int = 1) -> None:
        super().__init__()
        self.capacity = capacity
        self.order: list[tuple[str, str]] = []  # type: ignore[assignment]
        self.started = threading.Semaphore(0)  # type: ignore[assignment]

    def run(self, request: CheckRequest) -> dict:
        self.order.append((request.learner_id, request.files.get("f", "")))
        self.started.release()
        self.gate.acquire(timeout=30)
        return {"report": {"submission": "", "steps": []}, "worked_html": "", "seconds": 0.0}


def req(learner: str, text: str = "", step: str = "step1") -> CheckRequest:
    return CheckRequest(learner, step, {"f": text})


@pytest.fixture
def gated():
    runner = GatedRunner()
    q = FairQueue(runner)
    yield runner, q
    for _ in range(200):
        runner.gate.release()
    q.close()


def test_a_newer_check_with_changed_code_replaces_the_waiting_one(gated):
    runner, q = gated
    q.submit(req("busy"))
    assert runner.started.acquire(timeout=10)
    q.submit(req("other"))
    old = q.submit(req("ann", "v1"))
    assert q.position("ann") == 2
    new = q.submit(req("ann", "v2"))  # saved again while waiting: the newer code is what counts
    answered = old.result(timeout=10)  # at once, never graded
    assert answered["superseded"] is True and answered["grader_failed"] is True
    assert "newer check of step1 replaced this one" in answered["report"]["error"]
    assert q.position("ann") == 2  # it kept the place the first one had earned
    with pytest.raises(AlreadyChecking):
        q.submit(req("ann", "v2"))  # the same code again: nothing new to grade
    for _ in range(3):
        runner.gate.release()
    new.result(timeout=10)
    assert [who for who, _ in runner.order] == ["busy", "other", "ann"]
    assert runner.order[-1] == ("ann", "v2")
    assert q.stats().replaced == 1


def test_a_running_check_is_never_replaced_and_a_changed_one_waits_its_turn(gated):
    runner, q = gated
    first = q.submit(req("ann", "v1"))
    assert runner.started.acquire(timeout=10)
    with pytest.raises(AlreadyChecking):
        q.submit(req("ann", "v1"))
    second = q.submit(req("ann", "v2"))
    assert q.position("ann") == 1
    runner.gate.release()
    assert "superseded" not in first.result(timeout=10)
    runner.gate.release()
    second.result(timeout=10)
    assert runner.order == [("ann", "v1"), ("ann", "v2")]


def test_several_accounts_of_one_person_delay_an_honest_check_by_one_check_each(gated):
    """Five accounts each keep five steps' checks waiting; the honest learner's check starts
    after at most one check of each account (each bounded by the check's budget)."""
    runner, q = gated
    accounts = [f"sock{i}" for i in range(5)]
    q.submit(req("busy"))
    assert runner.started.acquire(timeout=10)
    futures = [q.submit(req(a, "x", f"step{s}")) for s in range(1, 6) for a in accounts]
    honest = q.submit(req("honest", "mine"))
    assert q.position("honest") == len(accounts) + 1
    runner.gate.release()  # "busy" ends; then one check at a time
    for _ in range(len(accounts) + 1):
        assert runner.started.acquire(timeout=10)
        if runner.order[-1][0] == "honest":
            break
        runner.gate.release()
    ahead = [who for who, _ in runner.order[1:-1]]
    assert runner.order[-1][0] == "honest"
    assert sorted(ahead) == sorted(set(ahead)) and len(ahead) <= len(accounts)
    runner.gate.release()
    honest.result(timeout=10)
    for _ in futures:
        runner.gate.release()
    for f in futures:
        f.result(timeout=10)
    assert len(runner.order) == 2 + len(futures)


def test_places_are_told_on_change_coalesced_not_on_a_clock():
    """80 learners waiting while 80 checks start one by one: a few events per learner (a place
    a quarter closer, or about to run), not one per start (80 x 80), and the last one is told
    when it is about to run."""
    places: dict[str, tuple[str, int]] = {f"l{i}": ("step1", i + 1) for i in range(80)}
    told: list[dict] = []
    n = QueueNotifier(lambda: dict(places), told.append, near=2)
    try:
        n.flush()
        assert len(told[0]) == 80  # everyone hears their first place once
        for start in range(80):  # a check starts: everyone behind moves up by one
            del places[f"l{start}"]
            for who, (step, pos) in list(places.items()):
                places[who] = (step, pos - 1)
            n.flush()
        events = sum(len(t) for t in told)
        assert events <= 80 * 12, events  # log base 4/3 of 80 is 15: each learner hears fewer
        near_front = [t for t in told if "l79" in t]
        assert near_front[-1]["l79"][1] <= 2
    finally:
        n.close()


def test_worth_telling_rules():
    assert worth_telling(None, ("step1", 40), 0.0, 4)
    assert not worth_telling(("step1", 40), ("step1", 40), 99.0, 4)
    assert not worth_telling(("step1", 40), ("step1", 39), 1.0, 4)
    assert worth_telling(("step1", 40), ("step1", 30), 1.0, 4)  # a quarter closer
    assert worth_telling(("step1", 40), ("step1", 39), 10.0, 4)  # quiet for long
    assert worth_telling(("step1", 5), ("step1", 4), 0.0, 4)  # about to run
    assert worth_telling(("step1", 5), ("step2", 5), 0.0, 4)


def test_the_queue_pokes_its_notifier_and_sends_estimates():
    runner = GatedRunner()
    seen: list[dict] = []
    got = threading.Event()

    def on_change(changes: dict) -> None:
        seen.append(changes)
        got.set()

    q = FairQueue(runner, on_change=on_change)
    try:
        q.submit(req("a"))
        assert runner.started.acquire(timeout=10)
        q.submit(req("b"))
        deadline = time.monotonic() + 20
        while not any("b" in s for s in seen):
            assert time.monotonic() < deadline
            got.wait(1)
        assert next(s for s in seen if "b" in s)["b"] == ("step1", 1)
        assert q.estimate(1) is not None and q.estimate(3) >= q.estimate(1)
        assert q.estimate(None) is None
    finally:
        for _ in range(5):
            runner.gate.release()
        q.close()
