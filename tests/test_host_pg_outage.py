"""The PostgreSQL store when the database goes away mid-class and comes back.

A real cluster is stopped (`fast`: the administrator's restart; `immediate`:
as if the server crashed) while learners save. What must hold: every call
either returns (and then its row is there after the restart) or raises
`StoreUnavailable` (the app's 503 with Retry-After), never another error and
never a hang; while the database is away, calls fail quickly; when it returns,
the same store object works again by itself.
"""

from __future__ import annotations

import threading
import time

import pytest
from pg_cluster import cluster_or_skip

from attn_practice.grader.host.store.base import StoreUnavailable
from attn_practice.grader.host.store.factory import open_store
from attn_practice.grader.host.store.postgres import (
    DEFAULT_TIMEOUT,
    DOWN_TIMEOUT,
    RECONNECT_TIMEOUT,
)

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")


@pytest.fixture
def cluster():
    with cluster_or_skip() as c:
        yield c


def _until_back(store, limit: float) -> float:
    """Seconds until the store answers again (fails the test past `limit`)."""
    t0 = time.monotonic()
    while True:
        try:
            store.ping()
            return time.monotonic() - t0
        except StoreUnavailable:
            assert time.monotonic() - t0 < limit, "the store did not recover by itself"
            time.sleep(0.05)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_away_means_store_unavailable_quickly_and_back_means_working_again(cluster, tmp_path, mode):
    store = open_store(cluster.url, tmp_path)
    try:
        learner = store.create_learner("A", "", "ha")
        before = store.save_version(learner.id, "step1", "before")
        cluster.stop(mode)
        for call in (lambda: store.save_version(learner.id, "step1", "away"), store.ping,
                     lambda: store.versions(learner.id, "step1"), store.learners):
            t0 = time.monotonic()
            with pytest.raises(StoreUnavailable) as info:
                call()
            assert time.monotonic() - t0 < 2 * DEFAULT_TIMEOUT + 1  # bounded, never a hang
            assert info.value.retry_after > 0
        assert store.available is False
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.learners()
        assert time.monotonic() - t0 < DOWN_TIMEOUT + 1  # known away: answer at once
        cluster.start()
        _until_back(store, RECONNECT_TIMEOUT + DEFAULT_TIMEOUT + 5)
        assert store.available is True
        after = store.save_version(learner.id, "step1", "after")
        assert [v.id for v in store.versions(learner.id, "step1")] == [after.id, before.id]
    finally:
        store.close()


def test_saves_in_flight_across_a_crash_and_restart_lose_nothing_acknowledged(cluster, tmp_path):
    store = open_store(cluster.url, tmp_path)
    other = open_store(cluster.url, tmp_path / "second-process")
    try:
        learners = [store.create_learner(f"L{i}", "", f"h{i}") for i in range(6)]
        acked: dict[str, list[str]] = {ln.id: [] for ln in learners}
        refused: list[int] = []
        unexpected: list[BaseException] = []
        stop = threading.Event()

        def learner_saves(k: int) -> None:
            s = (store, other)[k % 2]
            ln = learners[k]
            i = 0
            while not stop.is_set():
                try:
                    v = s.save_version(ln.id, "step2", f"{k}:{i}")
                    acked[ln.id].append(v.id)
                except StoreUnavailable:
                    refused.append(k)
                    time.sleep(0.05)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    unexpected.append(exc)
                    return
                i += 1

        threads = [threading.Thread(target=learner_saves, args=(k,)) for k in range(len(learners))]
        for t in threads:
            t.start()
        time.sleep(0.5)
        cluster.stop("immediate")
        time.sleep(1.0)
        cluster.start()
        _until_back(store, RECONNECT_TIMEOUT + DEFAULT_TIMEOUT + 5)
        _until_back(other, RECONNECT_TIMEOUT + DEFAULT_TIMEOUT + 5)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert not unexpected, unexpected
        assert refused, "the outage was never seen (the test did not test anything)"
        for ln in learners:
            stored = {v.id for v in store.versions(ln.id, "step2", limit=100_000)}
            missing = [v for v in acked[ln.id] if v not in stored]
            assert not missing, f"{len(missing)} acknowledged saves lost for {ln.display_name}"
            assert len(acked[ln.id]) > 0
    finally:
        store.close()
        other.close()


def test_a_busy_pool_is_not_a_database_away(cluster, tmp_path):
    """Every pooled connection busy: that request gets 503 (busy), but the process does not
    switch to "away" (which would answer everyone 503 at once while the database is fine)."""
    from attn_practice.grader.host.store.postgres import PostgresStore

    store = PostgresStore.open(cluster.url, pool_size=1, timeout=0.5)
    try:
        store.create_learner("A", "", "ha")
        hog = threading.Thread(target=store._read, args=("SELECT pg_sleep(2)",))
        hog.start()
        time.sleep(0.3)
        with pytest.raises(StoreUnavailable) as info:
            store.learners()
        assert "busy" in str(info.value)
        assert store.available is True
        hog.join()
        assert [ln.display_name for ln in store.learners()] == ["A"]
    finally:
        store.close()
