"""The LTI half of the class store, on SQLite and on a real PostgreSQL (a throwaway cluster).

What the launch and the grade passback rely on, whatever the database:
one learner per (issuer, sub) even when two first launches race; a nonce
spent once, only with its own state, only while fresh; the score outbox in
order per link with timestamps that strictly increase (also when the clock
steps back), unchanged scores not queued twice, leases that keep a second
sender off a score being posted, and the course score as §4.1 counts it.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import datetime

import pytest
from pg_cluster import cluster_or_skip

from attn_practice.grader.host.lti import ags
from attn_practice.grader.host.store.factory import open_store
from attn_practice.grader.host.store.sql_lti import ScoreState

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = open_store(None, tmp_path)
    else:
        pytest.importorskip("psycopg")
        s = open_store(request.getfixturevalue("cluster").create_database(f"lti_{next(_names)}"), tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_one_learner_per_issuer_and_sub_even_when_first_launches_race(store):
    got: list[str] = []

    def first_launch() -> None:
        learner, _ = store.lti_learner_or_create("https://lms.example", "sub-1", "Ann", "", f"h{time.time_ns()}")
        got.append(learner.id)

    threads = [threading.Thread(target=first_launch) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1
    assert len(store.learners()) == 1
    other, new = store.lti_learner_or_create("https://other.example", "sub-1", "Ann", "", "h-other")
    assert new and other.id != got[0]  # the same sub at another issuer is another person
    assert store.lti_learner("https://lms.example", "sub-1").id == got[0]


def test_a_nonce_is_spent_once_with_its_own_state_while_fresh(store):
    store.add_lti_nonce("n1", "state-a", time.time() + 600)
    assert store.use_lti_nonce("n1", "state-b") == "state"
    assert store.use_lti_nonce("n1", "state-a") == ""
    assert store.use_lti_nonce("n1", "state-a") == "used"
    assert store.use_lti_nonce("never-issued", "state-a") == "unknown"
    store.add_lti_nonce("n2", "state-c", time.time() - 1)
    assert store.use_lti_nonce("n2", "state-c") == "expired"


def _link(store, learner_id: str, resource: str = "rl-1"):
    return store.save_lti_link(learner_id, "https://lms.example", "client", "sub-1", "course-1", resource,
                               "https://lms.example/li/1?type_id=1", "",
                               ["https://purl.imsglobal.org/spec/lti-ags/scope/score"])


def test_the_outbox_keeps_order_and_strictly_increasing_timestamps(store, monkeypatch):
    learner, _ = store.lti_learner_or_create("https://lms.example", "sub-1", "Ann", "", "h1")
    link = _link(store, learner.id)
    assert _link(store, learner.id).id == link.id  # a second launch updates the same link
    assert store.enqueue_lti_score(link.id, learner.id, 0.0, 5.0, False) is None  # nothing to say yet
    first = store.enqueue_lti_score(link.id, learner.id, 1.0, 5.0, False)
    assert store.enqueue_lti_score(link.id, learner.id, 1.0, 5.0, False) is None  # unchanged
    frozen = time.time() - 3600  # the clock steps back an hour
    monkeypatch.setattr(time, "time", lambda: frozen)
    second = store.enqueue_lti_score(link.id, learner.id, 0.0, 5.0, False)
    third = store.enqueue_lti_score(link.id, learner.id, 2.0, 5.0, False)
    monkeypatch.undo()
    assert first < second < third
    unsent = store.unsent_lti_scores()
    stamps = [datetime.fromisoformat(s.stamp) for s in unsent]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    assert all(s.stamp.endswith("+00:00") and "." in s.stamp for s in unsent)

    # only the oldest unsent score of a link is due, and a leased one is no one else's
    due = store.due_lti_scores()
    assert [s.id for s in due] == [first]
    assert store.lease_lti_score(first, 30) and not store.lease_lti_score(first, 30)
    store.lti_score_failed(first, "HTTP 503: down", time.time() + 3600)
    assert [s.state for s in store.unsent_lti_scores()][0] is ScoreState.FAILING
    assert store.due_lti_scores() == []  # backing off, and nothing after it jumps the queue
    store.retry_failing_lti_scores()  # the platform answered again
    assert [s.id for s in store.due_lti_scores()] == [first]  # retried before anything after it
    store.lti_score_sent(first, "HTTP 200")
    assert [s.id for s in store.due_lti_scores()] == [second]
    assert store.lti_score_counts() == {"sent": 1, "pending": 2}


def test_the_course_score_counts_the_latest_checks(store):
    learner, _ = store.lti_learner_or_create("https://lms.example", "sub-9", "Ben", "", "h9")
    _link(store, learner.id)
    v = store.save_version(learner.id, "step1", "x")
    report = {"steps": [{"id": "step1", "status": "passed", "diagnoses": []}]}
    store.save_report(learner.id, "step1", v.id, report)
    given, maximum, completed = ags.course_score(store, None, learner.id)
    assert (given, maximum, completed) == (1.0, 5.0, False)
    assert ags.sync_learner(store, None, learner.id) == 1
    assert ags.sync_learner(store, None, learner.id) == 0
    store.save_report(learner.id, "step1", v.id, {"steps": [{"id": "step1", "status": "failed", "diagnoses": []}]})
    assert store.lti_recently_checked(time.time() - 60) == [learner.id]
    assert ags.sync_learner(store, None, learner.id) == 1
    assert [s.score_given for s in store.unsent_lti_scores()] == [1.0, 0.0]


def test_scores_url_keeps_the_query():
    assert ags.scores_url("https://m.example/mod/lti/services.php/2/lineitems/7/lineitem?type_id=3") == \
        "https://m.example/mod/lti/services.php/2/lineitems/7/lineitem/scores?type_id=3"
    assert ags.scores_url("https://c.example/api/lti/courses/1/line_items/5/") == \
        "https://c.example/api/lti/courses/1/line_items/5/scores"
