"""Replayed examples (in memory, on disk, batched) never change a report."""

from __future__ import annotations

import pytest
from test_grade import make_submission

from attn_practice.grader import replay
from attn_practice.grader.engine import Engine, RunOptions
from attn_practice.grader.results import without_timings


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_PRACTICE_CACHE", str(tmp_path / "cache" / "results"))
    return tmp_path / "cache"


@pytest.mark.slow
def test_replayed_reports_equal_fresh_hypothesis_runs(tmp_path, cache):
    subs = [
        make_submission(tmp_path / "ok"),
        make_submission(tmp_path / "bad", {3: "wrong_softmax_global", 1: "wrong_transpose_all_axes"}),
        make_submission(tmp_path / "worse", {4: "wrong_weights_transposed", 5: "wrong_scale_by_dv"}),
    ]
    fresh = []
    for s in subs:
        with Engine(RunOptions(persist_examples=False)) as engine:  # a new engine: nothing recorded
            fresh.append(without_timings(engine.grade(s).to_dict()))
    replay.warm(RunOptions().max_examples)
    assert replay.store_path().is_file()
    with Engine() as engine:
        replayed = [without_timings(engine.grade(s).to_dict()) for s in subs]
    assert replayed == fresh


def test_store_round_trips_and_marks_completeness(cache):
    path = replay.warm(5, step_ids=["step2"])
    assert path is not None and path.is_file()
    loaded = replay.ExampleReplay(path)
    keys = [k for k in loaded.all_recordings() if k[1] == 5]
    assert keys and all(k[0].startswith("test_step2_scale.py::") for k in keys)
    assert 5 not in loaded.complete  # only one step was recorded
    example = loaded.recordings[keys[0]][0]
    assert example  # keyword arguments with arrays and numbers


def test_a_corrupt_store_is_ignored_and_rewritten(cache, tmp_path):
    path = replay.store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    assert replay.ExampleReplay(path).all_recordings() == {}
    sub = make_submission(tmp_path / "s", steps=["step1_scores"])
    with Engine() as engine:
        report = engine.grade(sub)
    assert report.score == 1.0
    assert replay.ExampleReplay(path).all_recordings()  # rebuilt from the passing run
