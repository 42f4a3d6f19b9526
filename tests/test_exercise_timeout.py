"""Exercise.timeout (exercise.yaml `timeout:`) is each call's default timeout; a course's
`timeouts` override it (issue 10 item 6)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.sandbox.learner import Limits

HANGS = "def dot_scores(Q, K):\n    while True:\n        pass\n"


@pytest.fixture
def hanging(tmp_path):
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(HANGS)
    return sub


def _timeout_message(report) -> str:
    step = report.step("step1")
    assert step.status.value == "timeout"
    return next(t.message for t in step.tests if t.status.value == "timeout")


@pytest.mark.parametrize("seconds", [0.4, 0.9])
def test_the_exercise_timeout_is_the_call_timeout(hanging, seconds):
    ex = dataclasses.replace(resolve_step("step1"), timeout=seconds)
    with Engine(RunOptions(secret="t", persist_examples=False)) as engine:
        message = _timeout_message(engine.grade(hanging, [ex]))
    assert f"within {seconds:g} s" in message


def test_explicit_engine_limits_win_over_the_exercise(hanging):
    ex = dataclasses.replace(resolve_step("step1"), timeout=5.0)
    options = RunOptions(secret="t", persist_examples=False, limits=Limits(call_timeout=0.3))
    with Engine(options) as engine:
        assert "within 0.3 s" in _timeout_message(engine.grade(hanging, [ex]))


def test_a_course_timeout_overrides_the_exercise(hanging, tmp_path):
    course = tmp_path / "course.yaml"
    for text, seconds in (("steps: [step1]\ntimeouts: {step1: 0.6}\n", 0.6),
                          ("steps: [step1]\n", resolve_step("step1").timeout)):
        course.write_text(text)
        result = CliRunner().invoke(cli, ["grade", str(hanging), "--course", str(course), "--format", "json",
                                          "--no-cache"], env={"ATTN_PRACTICE_SECRET": "t"})
        step = json.loads(result.output)["steps"][0]
        assert step["status"] == "timeout"
        assert f"within {seconds:g} s" in step["tests"][0]["message"] + "".join(
            t["message"] for t in step["tests"])
