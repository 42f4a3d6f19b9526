"""The Store contract, run against SQLite and a real PostgreSQL (a throwaway cluster).

Every test takes `store` and runs twice: on `SQLiteStore` in tmp_path and on
`PostgresStore` in a fresh database of one module-wide cluster. The
PostgreSQL-only tests below add what only several processes on one database
can break: two stores writing at once (the next version number, event ids
committed out of order), and migration by two processes starting together.
The database going away mid-class is in test_host_pg_outage.py.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest
from pg_cluster import cluster_or_skip

from attn_practice.grader.host.store import schema
from attn_practice.grader.host.store.base import Store
from attn_practice.grader.host.store.factory import open_store

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture
def pg_url(cluster):
    return cluster.create_database(f"class_{next(_names)}")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = open_store(None, tmp_path)
    else:
        s = open_store(request.getfixturevalue("pg_url"), tmp_path)
    try:
        yield s
    finally:
        s.close()


def _report(step: str, status: str, diagnoses: list[str] = ()) -> dict:
    return {"schema": "attn-practice.grade/1", "submission": "", "score": 1.0 if status == "passed" else 0.0,
            "max_score": 1.0, "steps": [{"id": step, "status": status, "diagnoses": list(diagnoses),
                                         "tests": []}]}


# ------------------------------------------------------------------ the contract, both stores
def test_store_is_the_protocol_and_migrates_idempotently(store):
    assert isinstance(store, Store)
    store.migrate()
    store.migrate()
    assert store.schema_version() == len(schema.MIGRATIONS)
    assert store.ping() is True


def test_learners_by_id_and_resume_hash_and_reissue(store):
    a = store.create_learner("Ada", "s1", "hash-a")
    b = store.create_learner("Bo ünïcode ✓", "", "hash-b")
    assert store.learner(a.id) == a
    assert store.learner_by_resume_hash("hash-b") == b
    assert store.learner("nope") is None and store.learner_by_resume_hash("nope") is None
    assert [x.id for x in store.learners()] == [a.id, b.id]
    assert store.reissue_resume(a.id, "hash-a2") is True
    assert store.learner_by_resume_hash("hash-a") is None
    assert store.learner_by_resume_hash("hash-a2") == a
    assert store.reissue_resume("nope", "x") is False
    assert len(a.id) >= 20 and a.id != b.id


def test_every_save_is_a_new_version_newest_first_and_scoped_to_its_learner(store):
    a = store.create_learner("A", "", "ha")
    b = store.create_learner("B", "", "hb")
    texts = ["v1", "v2 'quoted' ? %s %% \\", "v3 ünïcode\n" * 50]
    saved = [store.save_version(a.id, "step1", t) for t in texts]
    store.save_version(a.id, "step2", "other step")
    assert [v.content for v in store.versions(a.id, "step1")] == texts[::-1]
    assert [v.content for v in store.versions(a.id, "step1", limit=2)] == texts[:0:-1]
    assert store.version(a.id, saved[0].id) == saved[0]
    assert store.version(b.id, saved[0].id) is None  # another learner's version id
    assert store.versions(b.id, "step1") == []
    latest = store.latest_files(a.id)
    assert latest["step1"].content == texts[-1] and latest["step2"].content == "other step"
    assert store.latest_files(b.id) == {}


def test_times_are_kept_to_the_millisecond(store):
    """A 4-byte float (PostgreSQL's REAL) would round an epoch time to minutes."""
    a = store.create_learner("A", "", "ha")
    before = time.time()
    v = store.save_version(a.id, "step1", "x")
    stored = store.version(a.id, v.id)
    assert abs(stored.created - before) < 1.0
    assert stored.created == pytest.approx(v.created, abs=1e-3)


def test_reports_latest_per_learner_and_step_and_check_counts(store):
    a = store.create_learner("A", "", "ha")
    b = store.create_learner("B", "", "hb")
    v = store.save_version(a.id, "step2", "x")
    store.save_report(a.id, "step2", v.id, _report("step2", "failed", ["no-scale"]))
    store.save_report(a.id, "step2", v.id, _report("step2", "passed"))
    w = store.save_version(b.id, "step2", "y")
    store.save_report(b.id, "step2", w.id, _report("step2", "failed", ["no-scale", "wrong-axis"]))
    latest = store.latest_report(a.id, "step2")
    assert latest.passed is True and latest.status == "passed" and latest.diagnoses == ()
    rb = store.latest_report(b.id, "step2")
    assert rb.passed is False and rb.diagnoses == ("no-scale", "wrong-axis")
    assert rb.report["steps"][0]["diagnoses"] == ["no-scale", "wrong-axis"]
    assert store.latest_report(b.id, "step1") is None
    assert {(r.learner_id, r.status) for r in store.latest_reports()} == {(a.id, "passed"), (b.id, "failed")}
    progress = {(p.learner_id, p.step): p for p in store.progress()}
    assert progress[(a.id, "step2")].checks == 2 and progress[(b.id, "step2")].checks == 1
    assert [p.step for p in store.progress(b.id)] == ["step2"]


def test_open_step_keeps_the_first_time_and_hints_stop_at_the_total(store):
    a = store.create_learner("A", "", "ha")
    first = store.open_step(a.id, "step3")
    time.sleep(0.01)
    again = store.open_step(a.id, "step3")
    assert again.started == first.started
    assert [store.reveal_hint(a.id, "step3", 2) for _ in range(4)] == [1, 2, 2, 2]
    assert store.reveal_hint(a.id, "step4", 3) == 1  # opens the step too


def test_events_in_order_from_a_cursor(store):
    a = store.create_learner("A", "", "ha")
    start = store.last_event_id()
    ids = [store.record_event(a.id, "save", {"step": f"step{i}", "n": i}) for i in range(5)]
    assert ids == sorted(ids) and store.last_event_id() == ids[-1]
    events, cursor = store.events_since(start, limit=3)
    assert [e.data["n"] for e in events] == [0, 1, 2] and cursor == ids[2]
    events, cursor = store.events_since(cursor)
    assert [e.data["n"] for e in events] == [3, 4] and cursor == ids[-1]
    assert store.events_since(cursor) == ([], cursor)
    assert events[0].kind == "save" and events[0].learner_id == a.id


def test_settings_upsert(store):
    assert store.get_setting("join_code") is None
    store.set_setting("join_code", "abc")
    store.set_setting("join_code", "def ' ? %")
    assert store.get_setting("join_code") == "def ' ? %"


def test_concurrent_saves_of_one_step_are_all_kept_in_order(store):
    a = store.create_learner("A", "", "ha")
    errors: list[BaseException] = []

    def saver(k: int) -> None:
        try:
            for i in range(15):
                store.save_version(a.id, "step1", f"{k}:{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    versions = store.versions(a.id, "step1", limit=1000)
    assert len(versions) == 90
    for k in range(6):  # each saver's versions appear newest first, in its own order
        mine = [int(v.content.split(":")[1]) for v in versions if v.content.startswith(f"{k}:")]
        assert mine == list(range(14, -1, -1))


# ------------------------------------------------------------------ several processes, one database
def _two_stores(url: str, tmp_path: Path) -> tuple:
    return open_store(url, tmp_path / "p1"), open_store(url, tmp_path / "p2")


def test_two_processes_saving_one_step_never_share_a_version_number(pg_url, tmp_path):
    """The next version number is MAX+1 inside the write: two servers saving at once must
    still get distinct, ordered versions (the newest is the newest, none overwritten)."""
    s1, s2 = _two_stores(pg_url, tmp_path)
    try:
        learner = s1.create_learner("A", "", "ha")
        barrier = threading.Barrier(8)

        def saver(store, k: int) -> None:
            barrier.wait()
            for i in range(10):
                store.save_version(learner.id, "step1", f"{k}:{i}")

        threads = [threading.Thread(target=saver, args=((s1, s2)[k % 2], k)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seqs = [r[0] for r in s1._read("SELECT seq FROM versions WHERE learner_id = ?", (learner.id,))]
        assert len(seqs) == 80 and len(set(seqs)) == 80
        assert s2.versions(learner.id, "step1", limit=1)[0].content.endswith(":9")
    finally:
        s1.close()
        s2.close()


def test_a_reader_polling_events_never_skips_one_written_by_another_process(pg_url, tmp_path):
    """Events are the live channel between processes: a poller following the cursor must see
    every event exactly once, in id order, while two other processes write concurrently."""
    s1, s2 = _two_stores(pg_url, tmp_path)
    reader = open_store(pg_url, tmp_path / "p3")
    try:
        learner = s1.create_learner("A", "", "ha")
        done = threading.Event()
        seen: list[int] = []

        start = reader.last_event_id()  # before any writer runs: the poller thread may start late

        def poll() -> None:
            cursor = start
            while True:
                finished = done.is_set()
                events, cursor = reader.events_since(cursor)
                seen.extend(e.id for e in events)
                if finished and not events:
                    return

        def writer(store) -> list[int]:
            return [store.record_event(learner.id, "save", {"i": i}) for i in range(60)]

        written: list[int] = []
        poller = threading.Thread(target=poll)
        poller.start()
        writers = [threading.Thread(target=lambda s=s: written.extend(writer(s))) for s in (s1, s2, s1, s2)]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        done.set()
        poller.join(timeout=30)
        assert seen == sorted(written)
    finally:
        for s in (s1, s2, reader):
            s.close()


def test_two_processes_starting_together_migrate_once(pg_url, tmp_path):
    errors: list[BaseException] = []
    stores: list = []
    barrier = threading.Barrier(4)

    def start(k: int) -> None:
        barrier.wait()
        try:
            stores.append(open_store(pg_url, tmp_path / f"p{k}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        versions = stores[0]._read("SELECT version FROM schema_version ORDER BY version")
        assert [v[0] for v in versions] == list(range(1, len(schema.MIGRATIONS) + 1))
    finally:
        for s in stores:
            s.close()


def test_placeholders_are_converted_outside_quotes_only():
    from attn_practice.grader.host.store.postgres import for_postgres, to_pyformat

    assert to_pyformat("SELECT * FROM t WHERE a = ? AND b = '?' AND c LIKE 'x%'") == \
        "SELECT * FROM t WHERE a = %s AND b = '?' AND c LIKE 'x%%'"
    assert to_pyformat('SELECT "col?" FROM t WHERE a % 2 = ?') == 'SELECT "col?" FROM t WHERE a %% 2 = %s'
    assert "DOUBLE PRECISION" in for_postgres("CREATE TABLE t (created REAL NOT NULL)")
    assert for_postgres("SELECT realm FROM t") == "SELECT realm FROM t"


def test_a_wrong_url_says_why_without_the_password(cluster, tmp_path):
    from attn_practice.grader.host.store.base import StoreUnavailable

    with pytest.raises(ValueError) as bad:
        open_store("postgresql://alice:hunter2@/x?hostx=/nowhere", tmp_path)
    assert "hostx" in str(bad.value) and "hunter2" not in str(bad.value)
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable) as away:
        open_store(f"postgresql://alice:hunter2@/x?host={tmp_path}", tmp_path)
    assert time.monotonic() - t0 < 10
    assert "No such file" in str(away.value) and "hunter2" not in str(away.value)
    with pytest.raises(StoreUnavailable) as missing:
        open_store(cluster.database_url("no_such_class"), tmp_path)
    assert "no_such_class" in str(missing.value)
