"""The stored check queue on both databases: rows written when a check is queued, gone when its
answer is stored, and taken over on start: all of them by the only process (SQLite), on
PostgreSQL only those whose owner stopped beating its heart (several processes share it).
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from pg_cluster import cluster_or_skip

from attn_practice.grader.host.checks import stored
from attn_practice.grader.host.checks.base import CheckRequest
from attn_practice.grader.host.checks.queue import FairQueue
from attn_practice.grader.host.checks.stored import StoredQueue
from attn_practice.grader.host.store.factory import open_store

_names = itertools.count()


class HeldRunner:
    capacity = 1

    def __init__(self) -> None:
        self.gate = threading.Event()

    def run(self, request: CheckRequest) -> dict:
        self.gate.wait(30)
        return {"report": {"submission": "", "steps": []}, "worked_html": "", "seconds": 0.0}

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        self.gate.set()


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("psycopg")
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    url = None if request.param == "sqlite" else request.getfixturevalue("cluster").create_database(
        f"q_{next(_names)}")
    s = open_store(url, tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_a_row_per_queued_check_gone_once_its_answer_is_kept(store):
    """The row outlives the check's result until the caller has stored the answer (`settled`):
    a server killed in between runs the check again at its next start instead of losing it."""
    learner = store.create_learner("Ann", "", "h-ann")
    v = store.save_version(learner.id, "step1", "x = 1\n")
    runner = HeldRunner()
    q = StoredQueue(FairQueue(runner), store)
    try:
        future = q.submit(CheckRequest(learner.id, "step1", {"step1_scores.py": "x = 1\n"}))
        deadline = time.monotonic() + 10
        while not q.pending():  # written off the caller's thread (the server's event loop)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        rows = q.pending()
        assert [(r[1], r[2], r[3]) for r in rows] == [(learner.id, "step1", v.id)]
        runner.gate.set()
        future.result(timeout=30)
        q._rows.submit(lambda: None).result(timeout=30)  # whatever the row thread had queued is done
        assert len(q.pending()) == 1  # the result is out, its answer not yet stored
        q.settled(future, stored=True)
        deadline = time.monotonic() + 10
        while q.pending():
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        q.close()


def test_a_check_whose_answer_was_not_stored_keeps_its_row_and_a_replaced_one_leaves_it(store):
    learner = store.create_learner("Bo", "", "h-bo")
    store.save_version(learner.id, "step1", "x = 2\n")
    runner = HeldRunner()
    runner.gate.set()
    q = StoredQueue(FairQueue(runner), store)
    try:
        future = q.submit(CheckRequest(learner.id, "step1", {"step1_scores.py": "x = 2\n"}))
        future.result(timeout=30)
        q.settled(future, stored=False)  # the grader failed (a worker killed): nothing stored
        q._rows.submit(lambda: None).result(timeout=30)
        assert [r[1] for r in q.pending()] == [learner.id]  # run again at the next start
        q.settled(future, stored=True)  # said twice: the first word holds
        q._rows.submit(lambda: None).result(timeout=30)
        assert len(q.pending()) == 1
        # A waiting check replaced by a newer one of the same learner: the newer one's row counts.
        runner.gate.clear()
        first = q.submit(CheckRequest(learner.id, "step2", {"step2_scale.py": "a\n"}))  # runs, held
        waiting = q.submit(CheckRequest(learner.id, "step3", {"step3_softmax.py": "b\n"}))
        newer = q.submit(CheckRequest(learner.id, "step3", {"step3_softmax.py": "c\n"}))
        assert waiting.result(timeout=30).get("superseded")
        q.settled(waiting, stored=False)
        runner.gate.set()
        for f in (first, newer):
            f.result(timeout=30)
            q.settled(f, stored=True)
        q._rows.submit(lambda: None).result(timeout=30)
        assert [(r[1], r[2]) for r in q.pending()] == [(learner.id, "step1")]
    finally:
        q.close()


def test_rows_are_taken_over_only_from_a_process_that_is_gone(store, monkeypatch):
    learner = store.create_learner("Ben", "", "h-ben")
    store.save_version(learner.id, "step1", "x = 1\n")
    dead = StoredQueue(FairQueue(HeldRunner()), store)
    dead.submit(CheckRequest(learner.id, "step1", {"step1_scores.py": "x = 1\n"}))
    dead.close()  # its process stopped before running the check: the row stays
    alive = StoredQueue(FairQueue(HeldRunner()), store)
    try:
        assert alive.claim(everything=False) == []  # its owner beat its heart just now
        monkeypatch.setattr(stored, "STALE_SECONDS", -1.0)  # ... and then stopped
        taken = alive.claim(everything=False)
        assert [r[1] for r in taken] == [learner.id]
        assert alive.claim(everything=True) == []  # ours now: nobody takes it twice
        assert [r[4] for r in alive.pending()] == [alive.owner]
    finally:
        alive.close()
