"""Replayed examples (in memory, on disk, batched) never change a report."""

from __future__ import annotations

import numpy as np
import pytest
from test_grade import make_submission

from attn_practice.grader.engine import replay
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.engine.warm import warm
from attn_practice.grader.results import Failure, without_timings
from attn_practice.grader.suites.assertions import StepFailure


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
    warm(RunOptions().max_examples)
    assert replay.store_path().is_file()
    with Engine() as engine:
        replayed = [without_timings(engine.grade(s).to_dict()) for s in subs]
    assert replayed == fresh


def test_store_round_trips_and_marks_completeness(cache):
    path = warm(5, step_ids=["step2"])
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


# -- grade mode: the smallest failing recorded example, no Hypothesis engine ------------------

def _failing_when(sizes_that_fail):
    def test(step=None, x=None):
        if x.size in sizes_that_fail:
            raise StepFailure(Failure(kind="value", summary=f"failed on {x.size}"))
    return test


def test_replay_all_picks_the_smallest_failing_example_first_of_equals():
    recorded = [{"x": np.zeros(n)} for n in (6, 2, 4, 2, 1)]
    test = _failing_when({6, 2, 4})
    smallest = replay._replay_all(recorded, test, {}, stop_at_first=False)
    assert isinstance(smallest, StepFailure) and smallest.failure.summary == "failed on 2"
    first = replay._replay_all(recorded, test, {}, stop_at_first=True)
    assert first.failure.summary == "failed on 6"
    assert replay._replay_all(recorded, _failing_when(set()), {}, stop_at_first=False) is None


@pytest.mark.slow
def test_grade_mode_needs_no_hypothesis_run_and_is_stable(tmp_path, cache, monkeypatch):
    from hypothesis.core import StateForActualGivenExecution

    sub = make_submission(tmp_path / "bad", {3: "wrong_softmax_global", 5: "wrong_scale_by_dv"})
    warm(RunOptions().max_examples)
    with Engine(RunOptions()) as engine:
        shrunk = engine.grade(sub)

    def no_engine(*args, **kwargs):
        raise AssertionError("grade mode ran the Hypothesis engine")

    monkeypatch.setattr(StateForActualGivenExecution, "run_engine", no_engine)
    with Engine(RunOptions(shrink=False)) as engine:
        first = engine.grade(sub)
        again = engine.grade(sub)
    with Engine(RunOptions(shrink=False, persist_examples=True)) as engine:
        third = engine.grade(sub)
    assert without_timings(first.to_dict()) == without_timings(again.to_dict()) == without_timings(third.to_dict())
    # Same verdict for every test as the shrinking run; only the example shown may differ.
    # (Failures are listed smallest failing input first, and shrinking changes the sizes: compare as sets.)
    assert [(s.id, s.status, sorted((t.name, t.status) for t in s.tests)) for s in first.steps] == \
        [(s.id, s.status, sorted((t.name, t.status) for t in s.tests)) for s in shrunk.steps]
    assert [s.diagnoses for s in first.steps] == [s.diagnoses for s in shrunk.steps]
    failed = [t for s in first.steps for t in s.tests if t.failure is not None]
    assert failed and all(t.failure.repro for t in failed)


def test_plain_and_replayed_tests_batch_their_calls(tmp_path, cache, monkeypatch):
    from attn_practice.grader.sandbox import launcher

    sub = make_submission(tmp_path / "ok", steps=["step1_scores"])
    warm(RunOptions().max_examples, step_ids=["step1"])
    with Engine(RunOptions(shrink=False)) as engine:
        engine.grade(sub)  # the dry runs, once per engine
        ops = []
        real = launcher.Sandbox.request

        def counting(self, header, *args, **kwargs):
            ops.append(header.get("op"))
            return real(self, header, *args, **kwargs)

        monkeypatch.setattr(launcher.Sandbox, "request", counting)
        report = engine.grade(sub)
    assert report.score == 1.0
    assert "call" not in ops  # every call of every test came in a batch
    assert ops.count("call_many") == len(report.steps[0].tests)


def test_expected_values_are_memoised_as_copies():
    from attn_practice.grader.suites import assertions
    from attn_practice.reference import attention

    ctx = assertions.StepContext(None, None, attention.FUNCTIONS["softmax"])  # type: ignore[arg-type]
    x = np.array([[1.0, 2.0, 3.0]])
    first = ctx.expected(x, axis=-1)
    first[...] = 0  # a caller scribbling on its answer must not poison the memo
    again = ctx.expected(x.copy(), axis=-1)
    np.testing.assert_allclose(again, attention.softmax(x, axis=-1))
    assert not np.allclose(ctx.expected(x, axis=0), again)  # the keyword is part of the key


def test_quiet_failures_build_their_message_only_when_completed():
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.suites.assertions import StepContext
    from attn_practice.reference import attention

    ctx = StepContext(resolve_step("step1"), None, attention.dot_scores)  # type: ignore[arg-type]
    Q, K = np.ones((2, 3)), np.ones((2, 3))
    ctx.quiet = True
    with pytest.raises(StepFailure) as info:
        ctx.compare(np.zeros((2, 2)), attention.dot_scores(Q, K), (Q, K))
    assert info.value.failure.summary == "" and ctx.quiet  # nothing built yet, still quiet
    info.value.complete()
    assert info.value.failure.kind == "value" and "wrong values" in info.value.failure.summary
    assert "dot_scores(" in info.value.failure.repro
    with pytest.raises(StepFailure) as info:
        ctx.require(False, "rows must sum to 1", (Q, K))
    info.value.complete()
    assert info.value.failure.summary == "rows must sum to 1" and info.value.failure.repro
