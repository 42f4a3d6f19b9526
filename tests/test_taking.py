"""A class's copies are taken on a thread, ahead of grading (`staff.taking`): grading starts
on the first submission while the rest are still being copied, and nothing else changes."""

from __future__ import annotations

import threading
from pathlib import Path

from test_batch import graded_here
from test_grade import make_submission

from attn_practice.grader.results import GradeReport
from attn_practice.grader.staff import batch
from attn_practice.grader.staff.snapshot import Snapshots
from attn_practice.grader.staff.taking import Taken

#: Generous: a loaded machine may take long, but a deadlock must end the test, not the suite.
PATIENCE = 60.0


def test_copies_arrive_in_order_with_their_keys_and_an_uncopyable_one_is_graded_where_it_lies(tmp_path):
    subs = [make_submission(tmp_path / f"s{i}", steps=["step1_scores"]) for i in range(4)]
    missing = tmp_path / "gone"  # cannot be copied: graded where it lies, never keyed

    class Copies(Snapshots):
        def take(self, source):
            if Path(source) == missing:
                raise OSError("cannot be read")
            return super().take(source)

    with Copies() as snapshots, Taken(snapshots, [*subs, missing], keyer=lambda p: f"key:{p.name}") as taken:
        assert len(taken) == 5
        for i, sub in enumerate(subs):
            copy = taken[i]
            assert copy != sub and copy.parent == snapshots.root
            assert (copy / "step1_scores.py").read_bytes() == (sub / "step1_scores.py").read_bytes()
            assert taken.key(i) == f"key:{copy.name}"
        assert taken[4] == missing and taken.key(4) is None
        assert taken[1:3] == [taken[1], taken[2]]


def test_a_key_that_cannot_be_made_means_not_cached_not_a_crash(tmp_path):
    sub = make_submission(tmp_path / "s", steps=["step1_scores"])

    def broken(_path: Path) -> str:
        raise RuntimeError("no key")

    with Snapshots() as snapshots, Taken(snapshots, [sub, sub], keyer=broken) as taken:
        assert [taken.key(0), taken.key(1)] == [None, None]
        assert taken[0] != taken[1]  # each its own copy


def test_grading_starts_before_the_class_is_copied(tmp_path, monkeypatch):
    """The pool is handed the first submission while the third is still being copied (two are
    taken first, to tell a pool from grading here): with every copy taken first (as before),
    the copy of the third would wait for a grade that never came and this test would find
    the event unset."""
    subs = [make_submission(tmp_path / f"s{i}", steps=["step1_scores"]) for i in range(4)]
    first_graded = threading.Event()
    waited: list[bool] = []
    real_take = Snapshots.take

    def take(self, source):
        if Path(source) in subs[2:]:
            waited.append(first_graded.wait(PATIENCE))
        return real_take(self, source)

    def pool(options, paths, labels, todo, step_ids, jobs):
        for i in todo:
            assert Path(paths[i]).parent.name.startswith("attn-practice-graded-")
            yield i, GradeReport(submission=labels[i])
            first_graded.set()

    monkeypatch.setattr(Snapshots, "take", take)
    monkeypatch.setattr(batch, "_grade_pool", pool)
    monkeypatch.setattr(batch.os, "geteuid", lambda: 0)
    reports = batch.run_grading(batch.GradeRequest(subs, jobs=2, use_cache=False))
    assert waited == [True, True]
    assert [r.submission for r in reports] == [str(s) for s in subs]


def test_cached_reports_are_served_as_their_copies_arrive_and_only_the_rest_is_graded(tmp_path, monkeypatch):
    subs = [make_submission(tmp_path / f"s{i}", steps=["step1_scores"]) for i in range(3)]
    with open(subs[2] / "step1_scores.py", "a") as f:
        f.write("\n# not graded before\n")  # the cache is keyed by content
    cache_dir = tmp_path / "cache"
    first = batch.run_grading(batch.GradeRequest(subs[:2], jobs=1, cache_dir=cache_dir))
    assert [r.steps[0].status.value for r in first] == ["passed", "passed"]
    graded: list[int] = []
    monkeypatch.setattr(batch, "_grade_here", graded_here(graded))
    again = batch.run_grading(batch.GradeRequest(subs, jobs=2, cache_dir=cache_dir))
    assert graded == [2]  # one left to grade: here, not on a pool
    assert [r.submission for r in again] == [str(s) for s in subs]
    assert [r.steps[0].status.value for r in again[:2]] == ["passed", "passed"]
