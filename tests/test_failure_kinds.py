"""FailureKind carried from the sandbox's reply to the report, and the sandbox-side messages
(issue 10 item 3, issue 13 item 5): kinds are data, never read back from the text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_grade import IMPL, make_submission

from attn_practice.cli import cli
from attn_practice.grader import results
from attn_practice.grader.engine.plugin import _failed_test
from attn_practice.grader.results import (
    Failure,
    FailureKind,
    GradeReport,
    Status,
    StepResult,
)
from attn_practice.grader.sandbox.failures import format_array, repro_line
from attn_practice.grader.sandbox.learner import LearnerError
from attn_practice.reference import attention as reference


def test_every_kind_round_trips_through_json_as_its_string():
    for kind in FailureKind:
        failure = Failure(kind=kind.value, summary="s")
        assert failure.kind is kind
        step = StepResult("step1", "t", Status.FAILED, 0.0, 1.0,
                          tests=(results.TestResult("n", Status.FAILED, "s", failure),))
        data = json.loads(GradeReport("x", steps=(step,)).to_json())
        assert data["steps"][0]["tests"][0]["failure"]["kind"] == kind.value
        assert GradeReport.from_dict(data).steps[0].tests[0].failure.kind is kind
    assert FailureKind.TIMEOUT in {"timeout"} and "timeout" in {FailureKind.TIMEOUT}
    assert f"{FailureKind.NOT_IMPLEMENTED}" == "not-implemented"
    with pytest.raises(ValueError):
        Failure(kind="no-such-kind", summary="")


@pytest.mark.parametrize("kind, status", [
    (FailureKind.MEMORY, Status.ERROR), (FailureKind.EXIT, Status.ERROR), (FailureKind.CRASH, Status.ERROR),
    (FailureKind.INTERNAL, Status.ERROR), (FailureKind.TIMEOUT, Status.TIMEOUT),
    (FailureKind.RECURSION, Status.FAILED), (FailureKind.VALUE, Status.FAILED),
])
def test_the_status_comes_from_the_kind_not_the_message(kind, status):
    # A summary that says nothing: the old code searched it for "ran out of memory".
    result = _failed_test("t", LearnerError(Failure(kind=kind, summary="something went wrong")), 0.0)
    assert result.status is status


def _grade(sub: Path, steps: str) -> dict:
    course = sub.parent / f"{sub.name}-course.yaml"
    course.write_text(f"steps: {steps}\n")
    result = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json",
                                      "--no-cache"], env={"ATTN_PRACTICE_SECRET": "kinds"})
    assert "Traceback" not in result.output, result.output
    return {s["id"]: s for s in json.loads(result.stdout)["steps"]}  # warnings go to stderr


def _first_failure(step: dict) -> dict:
    return next(t["failure"] for t in step["tests"] if t.get("failure"))


@pytest.mark.slow
def test_memory_exit_and_recursion_in_a_call_keep_their_kind(tmp_path):
    sub = make_submission(tmp_path / "s")
    (sub / "step1_scores.py").write_text("import numpy as np\n\n\ndef dot_scores(Q, K):\n"
                                         "    return np.ones((1 << 16, 1 << 16, 64))\n")
    (sub / "step2_scale.py").write_text("import sys\n\n\ndef scale_scores(scores, d_k):\n    sys.exit(3)\n")
    (sub / "step4_weighted_sum.py").write_text("def weighted_sum(weights, V):\n    return weighted_sum(weights, V)\n")
    steps = _grade(sub, "[step1, step2, step4]")
    assert steps["step1"]["status"] == "error" and _first_failure(steps["step1"])["kind"] == "memory"
    assert "ran out of memory" in _first_failure(steps["step1"])["summary"]
    assert steps["step2"]["status"] == "error" and _first_failure(steps["step2"])["kind"] == "exit"
    assert steps["step4"]["status"] == "failed" and _first_failure(steps["step4"])["kind"] == "recursion"


def test_signature_hints_keep_the_stubs_defaults(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "step3_softmax.py").write_text("def softmax(x):\n    return x\n")
    step = _grade(sub, "[step3]")["step3"]
    assert step["status"] == "error"
    assert _first_failure(step)["kind"] == "signature"
    assert "def softmax(x, axis=-1):" in _first_failure(step)["hint"]
    # A function no rule can take for softmax (not a known alias, no fitting signature): the
    # missing function's hint still shows the stub's signature. (`soft_max(x, axis=-1)` would be
    # graded in softmax's place, with a warning: issue 36, tests/test_handins_*.)
    (sub / "step3_softmax.py").write_text("def normalise(x, y, z):\n    return x\n")
    failure = _first_failure(_grade(sub, "[step3]")["step3"])
    assert failure["kind"] == "missing-function" and "def softmax(x, axis=-1):" in failure["hint"]


@pytest.mark.parametrize("array", [np.array([True, False]), np.array([[1.5, -2.0]], dtype=np.float32),
                                   np.array([1, 2], dtype=np.int32), np.array([np.inf, -np.inf, np.nan]),
                                   np.array([[1.0, 2.0]])])
def test_repro_lines_run_on_numpy_1_and_2(array):
    text = format_array(array)
    assert "np.bool" not in text  # NumPy 2 only (and np.bool_ warns nowhere, but bool is plain Python)
    again = eval(text, {"np": np})  # noqa: S307 - our own repro line
    assert again.dtype == array.dtype and np.array_equal(again, array, equal_nan=True)
    line = repro_line("masked_attention", ("Q", "K", "V", "mask"), (array, array, array, array), {})
    assert line.startswith("masked_attention(") and "np.bool" not in line


def test_a_bool_mask_repro_line_runs(tmp_path):
    mask = np.array([[True, False], [True, True]])
    Q = np.array([[1.0, 0.0], [0.0, 1.0]])
    line = repro_line("masked_attention", ("Q", "K", "V", "mask"), (Q, Q, Q, mask), {})
    assert "dtype=bool" in line
    got = eval(line, {"np": np, "masked_attention": reference.masked_attention})  # noqa: S307
    assert got.shape == (2, 2)


@pytest.mark.slow
def test_printed_output_is_the_failing_calls_not_every_calls(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    shutil.copy(IMPL / "step1" / "wrong_transpose_all_axes.py", sub / "step1_scores.py")
    source = (sub / "step1_scores.py").read_text()
    source = source.replace("def dot_scores(Q, K):", "def dot_scores(Q, K):\n    print('shapes', Q.shape, K.shape)")
    (sub / "step1_scores.py").write_text("print('hello at import')\n" + source)
    step = _grade(sub, "[step1]")["step1"]
    assert step["status"] == "failed"
    output = step["output"]
    assert output.startswith("hello at import\n")
    assert output.count("shapes") == 1, output
    assert "printed during" in output and "only the first failing call" in output
    assert len(output.splitlines()) < 10
    # The call shown is the one the first failing test reports.
    first = next(t["failure"] for t in step["tests"] if t["status"] == "failed")
    shown = output.splitlines()[1].split()  # shapes (a, b) (c, d)
    q_shape = " ".join(shown[1:]).split(") (")[0] + ")"
    assert f"Q: shape {q_shape}" in first["details"], (output, first["details"])


def test_printed_output_of_one_call_is_bounded(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "step1_scores.py").write_text("def dot_scores(Q, K):\n    for i in range(500):\n"
                                         "        print('line', i)\n    return None\n")
    step = _grade(sub, "[step1]")["step1"]
    assert step["output"].count("line ") <= 40 and "more lines not shown" in step["output"]


@pytest.mark.slow
@pytest.mark.parametrize("body, words", [
    ("while True:\n    pass\n", "time limit"),
    ("x = []\nwhile True:\n    x.append(bytearray(10**7))\n", "memory limit is"),
    ("while True:\n    print('x' * 1000)\n", "output limit"),
])
def test_an_import_time_loop_says_which_limit_stopped_it(tmp_path, body, words):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(body + "\n\ndef dot_scores(Q, K):\n    return Q @ K.T\n")
    step = _grade(sub, "[step1]")["step1"]
    assert step["status"] == "error"
    assert words in step["error"], step["error"]
