"""The SQLite store: migrations forward, scoping by learner, committed before return, events cursor."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from attn_practice.grader.host.store import schema
from attn_practice.grader.host.store.base import StoreUnavailable
from attn_practice.grader.host.store.factory import open_store
from attn_practice.grader.host.store.sqlite import DB_FILE


def test_migrations_run_once_and_record_the_version(tmp_path):
    s = open_store(None, tmp_path)
    assert s.schema_version() == len(schema.MIGRATIONS)
    s.close()
    s = open_store(None, tmp_path)  # a second start migrates nothing and loses nothing
    assert s.schema_version() == len(schema.MIGRATIONS)
    db = sqlite3.connect(tmp_path / DB_FILE)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(schema.MIGRATIONS)
    db.close()
    s.close()


def test_ids_are_random_and_every_read_is_scoped_to_its_learner(tmp_path):
    s = open_store(None, tmp_path)
    a = s.create_learner("A", "", "ha")
    b = s.create_learner("B", "", "hb")
    va = s.save_version(a.id, "step1", "a's code")
    assert len(va.id) >= 22 and not va.id.isdigit() and len(a.id) >= 22
    assert s.version(b.id, va.id) is None
    assert s.version(a.id, va.id).content == "a's code"
    assert s.latest_files(b.id) == {}
    assert s.versions(b.id, "step1") == []
    assert s.latest_report(b.id, "step1") is None
    assert s.learner_by_resume_hash("ha").id == a.id and s.learner_by_resume_hash("nope") is None
    s.close()


def test_a_save_is_committed_when_it_returns(tmp_path):
    s = open_store(None, tmp_path)
    a = s.create_learner("A", "", "ha")
    v = s.save_version(a.id, "step2", "saved")
    other = sqlite3.connect(tmp_path / DB_FILE)  # another connection: sees only what is committed
    assert other.execute("SELECT content FROM versions WHERE id = ?", (v.id,)).fetchone() == ("saved",)
    other.close()
    s.close()


def test_concurrent_saves_all_land_in_order_per_step(tmp_path):
    s = open_store(None, tmp_path)
    a = s.create_learner("A", "", "ha")
    done: list[str] = []

    def save(i: int) -> None:
        for n in range(20):
            done.append(s.save_version(a.id, f"step{i}", f"{i}-{n}").id)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 80
    for i in range(1, 5):
        assert [v.content for v in s.versions(a.id, f"step{i}")] == [f"{i}-{n}" for n in reversed(range(20))]
    s.close()


def test_events_are_read_after_a_cursor(tmp_path):
    s = open_store(None, tmp_path)
    first = s.record_event("x", "saved", {"step": "step1"})
    s.record_event("y", "checked", {"step": "step2"})
    events, cursor = s.events_since(first)
    assert [e.learner_id for e in events] == ["y"] and cursor == s.last_event_id()
    assert s.events_since(cursor) == ([], cursor)
    s.close()


def test_settings_and_hints(tmp_path):
    s = open_store(None, tmp_path)
    assert s.setting_or_set("k", "first") == "first"
    assert s.setting_or_set("k", "second") == "first"
    s.set_setting("k", "third")
    assert s.get_setting("k") == "third"
    a = s.create_learner("A", "", "ha")
    assert [s.reveal_hint(a.id, "step1", 2) for _ in range(3)] == [1, 2, 2]
    s.close()


def test_a_closed_store_is_unavailable_not_a_crash(tmp_path):
    s = open_store(None, tmp_path)
    s.close()
    with pytest.raises(StoreUnavailable):
        s.learners()
    with pytest.raises(StoreUnavailable):
        s.set_setting("a", "b")


def test_an_unknown_db_url_is_refused(tmp_path):
    with pytest.raises(ValueError):
        open_store("mysql://x", tmp_path)


def test_a_failing_write_committed_beside_others_fails_alone(tmp_path):
    """Group commit: writes waiting together share a transaction, but each succeeds or fails alone."""
    s = open_store(None, tmp_path)
    a = s.create_learner("A", "", "taken")
    errors: list[BaseException] = []
    saved: list[str] = []

    def dup() -> None:
        for _ in range(20):
            try:
                s.create_learner("B", "", "taken")  # the resume hash is UNIQUE
            except sqlite3.IntegrityError as exc:
                errors.append(exc)

    def save() -> None:
        for n in range(40):
            saved.append(s.save_version(a.id, "step1", f"v{n}").id)

    threads = [threading.Thread(target=dup), threading.Thread(target=save), threading.Thread(target=save)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 20 and len(saved) == 80
    assert {v.id for v in s.versions(a.id, "step1", limit=200)} == set(saved)
    assert [lr.display_name for lr in s.learners()] == ["A"]
    s.close()


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request, tmp_path):
    """The same named methods on SQLite and on a throwaway PostgreSQL (skipped where none can run)."""
    if request.param == "sqlite":
        s = open_store(None, tmp_path)
        yield s
        s.close()
        return
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
    from pg_cluster import cluster_or_skip

    with cluster_or_skip() as cluster:
        s = open_store(cluster.create_database("light_reads"), tmp_path)
        yield s
        s.close()


def test_the_light_reads_and_quota_measure_agree_on_both_stores(any_store):
    s = any_store
    a = s.create_learner("A", "", "ha")
    v1 = s.save_version(a.id, "step1", "12345")
    s.save_report(a.id, "step1", v1.id, {"submission": "", "steps": [{"id": "step1", "status": "passed"}]})
    v2 = s.save_version(a.id, "step1", "123")
    s.save_report(a.id, "step1", v2.id, {"submission": "", "steps": [
        {"id": "step1", "status": "failed", "diagnoses": ["elementwise-product"]}]})
    assert s.learner_bytes(a.id) == 8
    assert s.passed_steps(a.id) == {"step1"}
    assert s.latest_standings(a.id) == {"step1": ("failed", False, v2.id)}
    (row,) = s.class_standings()
    assert (row.learner_id, row.step, row.passed, row.version_id, row.diagnoses) == (
        a.id, "step1", False, v2.id, ("elementwise-product",))
    assert s.latest_version_ids() == {(a.id, "step1"): v2.id}
    assert s.setting_or_set("k", "1") == "1" and s.setting_or_set("k", "2") == "1"


def test_report_history_of_one_learner_is_theirs_alone_oldest_first(any_store):
    """The drill-down and "Earlier versions" read one learner's checks (an indexed read at 200),
    the same rows the class's history holds for them."""
    s = any_store
    a, b = s.create_learner("A", "", "ha"), s.create_learner("B", "", "hb")
    for who, content in ((a, "1"), (b, "2"), (a, "3")):
        v = s.save_version(who.id, "step1", content)
        s.save_report(who.id, "step1", v.id, {"submission": "", "steps": [
            {"id": "step1", "status": "failed", "diagnoses": ["no-scale"]}]})
    mine = s.report_history(a.id)
    assert [r.learner_id for r in mine] == [a.id, a.id]
    assert mine == [r for r in s.report_history() if r.learner_id == a.id]
    assert [r.created for r in mine] == sorted(r.created for r in mine)
    assert s.report_history("no-such-learner") == []
