"""Fast stops (issue 20 item 6): one timeout per step, on each call's own clock, naming the call.

A step with an endless loop used to cost a batch deadline per test plus
a call timeout per test (28 s in `check`). Now the sandbox stops each call
at its limit by its own clock and says which call of a batch it was; the
first timeout stops the step (later tests fail at once with the same
message), and the worked example does not run a timed-out step again.
No wall-clock assertions here: the seconds are measured in bench/.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner, LearnerError
from attn_practice.grader.sandbox.prefetch import pack_calls

REFERENCE = (Path(__file__).resolve().parents[1] / "reference" / "attention.py").read_text()

#: softmax that loops forever only on 3-D input: the timed-out call must be a 3-D one
LOOPS_ON_3D = REFERENCE.replace(
    "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n",
    "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n"
    "    if np.ndim(x) == 3:\n        while True:\n            pass\n", 1)


def _sub(tmp_path: Path, source: str, name: str = "s") -> Path:
    sub = tmp_path / name
    sub.mkdir()
    (sub / "step3_softmax.py").write_text(source)
    return sub


def test_the_sandbox_stops_a_batch_at_the_call_that_ran_out_of_time(tmp_path):
    """call_many: the calls before the endless one are answered; the endless one is named."""
    sub = _sub(tmp_path, LOOPS_ON_3D)
    ok1, ok2, hang, never = (np.ones((2, 3)), np.zeros((1, 4)), np.ones((2, 2, 2)), np.ones((3,)))
    packed = pack_calls([((a,), {}, a.size) for a in (ok1, ok2, hang, never)])
    with Launcher() as launcher:
        learner = Learner(launcher, sub, step_id="step3", module="step3_softmax", function="softmax",
                          params=("x",), limits=Limits(call_timeout=0.5))
        assert learner.load().ok
        learner.prefetch(packed)
        # The sandbox answered the batch itself (the grader's deadline never fired). The
        # calls run in an order drawn from the salt: those before the endless one are
        # answered, the endless one is named, and none after it ran.
        kinds = {id(call[0][0]): r.get("kind") for call, r, _, _ in learner._prefetched}
        assert kinds[id(hang)] == "timeout"
        assert set(kinds.values()) <= {None, "timeout"} and list(kinds.values()).count("timeout") == 1
        assert learner.timeouts == 0
        np.testing.assert_allclose(learner(ok1), np.full((2, 3), 1 / 3))
        learner(ok2)
        with pytest.raises(LearnerError) as info:
            learner(hang)
        assert info.value.failure.kind == "timeout"
        assert "shape (2, 2, 2)" in info.value.failure.details
        assert "within 0.5 s" in info.value.failure.summary
        # One timeout per step: every later call fails at once with the same failure.
        with pytest.raises(LearnerError) as later:
            learner(never)
        assert later.value.failure is info.value.failure
        assert learner.timeouts == 1
        learner.close()


def test_a_single_call_is_stopped_by_the_sandbox_clock_too(tmp_path):
    sub = _sub(tmp_path, REFERENCE.replace("def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n",
                                           "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n"
                                           "    import time\n    time.sleep(3600)\n", 1))
    with Launcher() as launcher:
        learner = Learner(launcher, sub, step_id="step3", module="step3_softmax", function="softmax",
                          params=("x",), limits=Limits(call_timeout=0.4))
        with pytest.raises(LearnerError) as info:
            learner(np.ones((1, 2)))
        assert info.value.failure.kind == "timeout"
        assert "x: shape (1, 2)" in info.value.failure.details
        assert "softmax(np.array([[1., 1.]]))" in info.value.failure.repro
        learner.close()


def test_grading_a_step_that_loops_on_some_inputs_names_the_first_such_call(tmp_path):
    sub = _sub(tmp_path, LOOPS_ON_3D)
    ex = dataclasses.replace(resolve_step("step3"), timeout=0.5)
    with Engine(RunOptions(secret="t", persist_examples=False, shrink=False)) as engine:
        report = engine.grade(sub, [ex])
    step = report.step("step3")
    assert step.status.value == "timeout"
    timed_out = [t for t in step.tests if t.status.value == "timeout"]
    assert timed_out, step.tests
    # the same single failure for every stopped test: one timeout for the step
    # (grade echoes the input of the first failure only: the others carry its summary)
    assert len({t.failure.summary for t in timed_out}) == 1
    failure = timed_out[0].failure
    assert "softmax(...) did not return within 0.5 s" in failure.summary
    assert "remaining tests were stopped" in failure.summary
    assert len(failure.details.splitlines()[0].split("shape (")[1].split(")")[0].split(",")) == 3
    # tests that never give 3-D input still pass
    assert any(t.status.value == "passed" for t in step.tests)


@pytest.fixture
def looping_workspace(tmp_path):
    exe = shutil.which("attn-practice")
    assert exe
    ws = tmp_path / "ws"
    subprocess.run([exe, "start", str(ws)], check=True, capture_output=True, timeout=120)
    for stem in ("step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"):
        (ws / f"{stem}.py").write_text(REFERENCE)
    (ws / "step3_softmax.py").write_text(REFERENCE.replace(
        "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n",
        "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n    while True:\n        pass\n", 1))
    return exe, ws


def test_check_on_an_endless_loop_reports_one_timeout_naming_the_call(looping_workspace):
    exe, ws = looping_workspace
    result = subprocess.run([exe, "check", "step3"], cwd=ws, capture_output=True, text=True, timeout=120,
                            env={"PATH": str(Path(exe).parent) + ":/usr/bin:/bin", "COLUMNS": "200",
                                 "NO_COLOR": "1", "HOME": str(ws)})
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "softmax(...) did not return within" in out
    assert "so this step's remaining tests were stopped" in out
    assert "x: shape (1, 3)" in out  # the lesson's worked example is the first call
    assert out.count("did not return within") == 1  # one timeout shown, the rest summarised
    assert "timed out" in out  # the worked-example panel says so without running it again
