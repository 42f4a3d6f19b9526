"""Grading a class: CSV gradebook, the results cache, isolation between submissions, Dask."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner
from test_grade import make_submission

from attn_practice.cli import cli
from attn_practice.grader.engine.engine import RunOptions
from attn_practice.grader.results import GradeReport, without_timings
from attn_practice.grader.staff.worker import WarmEngine


def graded_here(seen: list[int]):
    """A stand-in for `batch._grade_here` that notes each submission it is given, reported passing."""
    def here(options, paths, labels, todo, step_ids):
        for i in todo:
            seen.append(i)
            yield i, GradeReport(submission=labels[i])

    return here


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["grade", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    return [
        make_submission(root / "ann"),
        make_submission(root / "ben", {3: "wrong_softmax_global"}),
        make_submission(root / "cat", {5: "wrong_no_scale"}),
    ]


def test_csv_gradebook_one_row_each_in_order(klass):
    code, out = run(*map(str, klass), "--format", "csv", "--no-cache", "--jobs", "2")
    assert code == 1
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["submission"] for r in rows] == [str(p) for p in klass]
    assert list(rows[0]) == ["submission", "score", "max_score", "step1", "step2", "step3", "step4",
                             "step5", "status", "diagnoses", "duration_s", "graded_path", "warnings"]
    assert [float(r["score"]) for r in rows] == [5.0, 4.0, 4.0]
    assert "step3:softmax-global" in rows[1]["diagnoses"]
    assert "step5:no-scale" in rows[2]["diagnoses"]


def test_second_run_comes_from_the_cache_and_changed_content_is_regraded(klass, tmp_path):
    cache = tmp_path / "cache"
    _, first = run(*map(str, klass), "--format", "json", "--cache-dir", str(cache), "--jobs", "2")
    entries = {p: p.stat().st_ino for p in cache.rglob("*.json")}
    assert len(entries) == 3
    _, second = run(*map(str, klass), "--format", "json", "--cache-dir", str(cache))
    assert without_timings(json.loads(first)) == without_timings(json.loads(second))
    # nothing was re-graded: a re-graded entry is stored anew (a new file); see bench/ for speed
    assert {p: p.stat().st_ino for p in cache.rglob("*.json")} == entries
    # Same content under another name: still served, re-labelled.
    ann = json.loads(second)[0]
    assert ann["submission"] == str(klass[0])
    # Changed content is never served from the cache.
    fixed = klass[1] / "step3_softmax.py"
    original = fixed.read_text()
    fixed.write_text((klass[0] / "step3_softmax.py").read_text())
    try:
        _, third = run(str(klass[1]), "--format", "json", "--cache-dir", str(cache))
        assert json.loads(third)["score"] == 5.0
    finally:
        fixed.write_text(original)


def test_a_broken_submission_does_not_touch_the_others(klass, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "step1_scores.py").write_text("import os\nos._exit(0)\n")
    (broken / "step2_scale.py").write_text("def scale_scores(scores, d_k):\n    while True: pass\n")
    (broken / "step3_softmax.py").write_bytes(b"\xff\xfe not utf-8")
    _, out = run(str(klass[0]), str(broken), str(klass[2]), "--format", "json", "--no-cache",
                 "--jobs", "2")
    a, b, c = json.loads(out)
    assert a["score"] == 5.0 and c["score"] == 4.0
    statuses = {s["id"]: s["status"] for s in b["steps"]}
    assert statuses["step1"] == "error" and statuses["step3"] == "error"
    assert statuses["step2"] in ("timeout", "failed")


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_csv_as_a_local_run(klass):
    pytest.importorskip("distributed")
    _, local = run(*map(str, klass), "--format", "json", "--no-cache", "--jobs", "2")
    _, dask = run(*map(str, klass), "--format", "json", "--no-cache", "--dask", "local")
    assert without_timings(json.loads(local)) == without_timings(json.loads(dask))


class _DeadPool:
    """A process pool whose workers never get going."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def submit(self, fn, *args):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        future = Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future


def test_workers_that_cannot_start_fall_back_to_grading_here(tmp_path, monkeypatch):
    from attn_practice.grader.staff import batch, pool

    monkeypatch.setattr(pool, "new_pool", _DeadPool)
    subs = [make_submission(tmp_path / f"s{i}", steps=["step1_scores"]) for i in range(3)]
    reports = batch.run_grading(batch.GradeRequest(subs, jobs=2, use_cache=False))
    assert [r.error for r in reports] == ["", "", ""]
    assert [r.steps[0].status.value for r in reports] == ["passed"] * 3


def test_a_submission_whose_worker_keeps_dying_is_reported_not_retried_forever(tmp_path, monkeypatch):
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from attn_practice.grader.staff import batch, pool

    class KillerPool(_DeadPool):
        def submit(self, fn, *args):
            future = Future()
            if not args:  # the pool's first task, which tells that workers start
                future.set_result(fn())
                return future
            _setup, path, _label, _step_ids = args
            if "killer" in path:
                future.set_exception(BrokenProcessPool("a worker died"))
            else:
                future.set_result(fn(*args))  # graded here, as a worker would
            return future

    monkeypatch.setattr(pool, "new_pool", KillerPool)
    monkeypatch.setattr(pool, "_WARM", WarmEngine())  # what the pool's initializer makes
    try:
        subs = [make_submission(tmp_path / name, steps=["step1_scores"]) for name in ("a", "killer", "b")]
        reports = batch.run_grading(batch.GradeRequest(subs, jobs=2, use_cache=False))
    finally:
        pool._WARM.close()
    assert [reports[i].steps[0].status.value for i in (0, 2)] == ["passed", "passed"]
    assert "worker died 2 times" in reports[1].error


def test_as_an_ordinary_user_a_step_short_of_processes_is_graded_again_alone(tmp_path, monkeypatch):
    """Side by side, one user's sandboxes share its process limit: a neighbour's fork storm
    must not cost an honest step its grade. Such a report is graded again once the pool is done."""
    from attn_practice.grader.results import GradeReport, Status, StepResult, TestResult
    from attn_practice.grader.staff import batch

    def squeezed(label: str) -> GradeReport:
        test = TestResult(name="t", status=Status.FAILED,
                          message="scale_scores raised RuntimeError: can't start new thread")
        return GradeReport(submission=label, steps=(StepResult(
            id="step2", title="", status=Status.FAILED, score=0.0, max_score=1.0, tests=(test,)),))

    def fake_pool(options, paths, labels, todo, step_ids, jobs):
        for i in todo:
            yield i, squeezed(labels[i]) if i == 1 else GradeReport(submission=labels[i])

    alone: list[int] = []
    monkeypatch.setattr(batch, "_grade_pool", fake_pool)
    monkeypatch.setattr(batch, "_grade_here", graded_here(alone))
    monkeypatch.setattr(batch.os, "geteuid", lambda: 1000)
    subs = [make_submission(tmp_path / f"s{i}", steps=["step2_scale"]) for i in range(3)]
    reports = batch.run_grading(batch.GradeRequest(subs, jobs=2, use_cache=False))
    assert alone == [1]
    assert [r.submission for r in reports] == [str(s) for s in subs]
    assert all("can't start new thread" not in t.message
               for r in reports for s in r.steps for t in s.tests)


def test_workers_started_before_the_course_take_the_parents_settings_with_their_first_task(
        tmp_path, monkeypatch):
    """`grade` may start its workers before it has read the course and set the Hypothesis
    folder and no-bytecode (`pool.start_early`): each task carries them, and a worker's
    engine is built from them, and built again when they change."""
    from attn_practice.grader.staff import pool

    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "hyp"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    options = RunOptions()
    setup = pool.worker_setup(options)
    assert dict(setup.env) == {"HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "hyp"), "PYTHONDONTWRITEBYTECODE": "1"}
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY")  # as in a worker spawned before they were set
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(pool, "_WARM", WarmEngine())  # what the pool's initializer makes
    try:
        engine = pool._engine(setup)
        assert os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "hyp")
        assert sys.dont_write_bytecode
        assert pool._engine(setup) is engine  # warm: the same engine for the next task
        other = pool.WorkerSetup(replace(options, max_examples=7), setup.env)
        assert pool._engine(other) is not engine and pool._engine(other).options.max_examples == 7
        moved = pool.WorkerSetup(other.options, (("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "hyp2")),))
        before = pool._engine(other)
        assert pool._engine(moved) is not before  # same options, another environment: built anew
        assert os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "hyp2")
    finally:
        pool._WARM.close()
