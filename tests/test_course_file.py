"""Course files that cannot mean anything, and private suites that would be skipped or fail to
import, are refused with file, key and line: through `grade` and through `selftest`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()

GOOD_TEST = '''\
import numpy as np
import pytest


@pytest.mark.step("step1")
def test_instructor_example(step):
    """Instructor's own example"""
    step.check(np.eye(3), np.ones((2, 3)))
'''


def _submission(tmp_path: Path) -> Path:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(REFERENCE)
    return sub


def _invoke(tmp_path: Path, course_text: str, command: str = "grade"):
    course = tmp_path / "course.yaml"
    course.write_text(course_text)
    if command == "grade":
        args = ["grade", str(_submission(tmp_path)), "--course", str(course), "--format", "json",
                "--no-cache"]
    else:
        args = ["selftest", "--course", str(course), "--step", "step1"]
    return CliRunner().invoke(cli, args)


@pytest.mark.parametrize(
    ("text", "line", "key", "needle"),
    [
        ("steps: [step1, step1]\n", 1, "steps", "listed twice"),
        ("steps:\n  - step1\n  - 2\n  - step2_scale\n", 4, "steps", "listed twice"),
        ("steps: [step1]\npoints:\n  step1: 1\n  step2: 3\n", 4, "points", "not graded"),
        ("steps: [step1]\ntimeouts:\n  step3: 2\n", 3, "timeouts", "not graded"),
        ("timeouts: {step5: 1000000}\n", 1, "timeouts", "at most 60"),
        ("timeouts:\n  step5: 0\n", 2, "timeouts", "at least"),
        ("max_examples: 100000\n", 1, "max_examples", "from 1 to"),
        ("memory_mb: 100000\n", 1, "memory_mb", "from 128 to"),
        ("memory_mb: 1.5\n", 1, "memory_mb", "whole number"),
        ("points: {step5: nan}\n", 1, "points", "expected a number"),
        ("points: {step5: two}\n", 1, "points", "expected a number"),
        ("extra_suites: private/\n", 1, "extra_suites", "list"),
        ("steps: step1\n", 1, "steps", "list"),
        ("name: x\nsteps: [step1]\nstep: [step2]\n", 3, "step", "unknown setting"),
        ("points: {step1: 1}\npoints: {step1: 2}\n", 2, "points", "given twice"),
        ("secret_env: 'not a name'\n", 1, "secret_env", "environment variable"),
    ],
)
def test_course_mistakes_are_refused_with_file_key_and_line(tmp_path, text, line, key, needle):
    res = _invoke(tmp_path, text)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert f"course.yaml: line {line}: key '{key}'" in res.output, res.output
    assert needle in res.output


@pytest.mark.parametrize(
    ("source", "line", "needle"),
    [
        (GOOD_TEST + "\n\ndef test_unmarked(step):\n    step.check(np.eye(3), np.eye(3))\n", 11,
         "no step marker"),
        ("import step1_scores\n" + GOOD_TEST, 1, "imports the learner's module step1_scores"),
        (GOOD_TEST + "\n\n@pytest.mark.step('step1')\ndef test_x(step):\n"
         "    from step1_scores import dot_scores\n", 13, "imports the learner's module"),
        (GOOD_TEST + "\n\ndef broken(:\n    pass\n", 11, "syntax error"),
        (GOOD_TEST.replace("import pytest", "import pytest\nfrom numpy import no_such_name"), 3,
         "does not import: ImportError"),
        (GOOD_TEST + "\nVALUE = undefined_name * 2\n", 10, "NameError"),
        (GOOD_TEST.replace('"step1"', '"step9"'), 5, "step9"),
        (GOOD_TEST.replace("(step)", "()").replace("step.check", "print"), 5, "`step` fixture"),
        (GOOD_TEST.replace('"step1"', '"step4"'), 5, "never grades"),
        (GOOD_TEST + "\n\nclass TestMore:\n    def test_b(self, step):\n        pass\n", 11,
         "test classes are not collected"),
    ],
)
@pytest.mark.parametrize("command", ["grade", "selftest"])
def test_private_suite_problems_are_course_errors_with_file_and_line(tmp_path, source, line, needle,
                                                                     command):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_mine.py").write_text(source)
    res = _invoke(tmp_path, "steps: [step1, step2]\nextra_suites: [private/]\n", command)
    assert res.exit_code == 2, res.output
    assert "Interrupted" not in res.output and "Traceback" not in res.output
    assert re.search(rf"test_mine\.py:{line}: .*{re.escape(needle)}", res.output), res.output


def test_a_good_private_suite_runs_and_is_reported(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_mine.py").write_text(GOOD_TEST)
    res = _invoke(tmp_path, "points: {step6: 0.5}\nextra_suites: [private/]\n")
    assert res.exit_code == 1, res.output  # step2..5 and step6 missing
    obj = json.loads(res.output)
    assert obj["max_score"] == 5.5
    step1 = obj["steps"][0]
    assert step1["status"] == "passed"
    assert "Instructor's own example" in [t["name"] for t in step1["tests"]]


def test_course_init_refuses_to_overwrite_and_keeps_a_backup(tmp_path):
    runner = CliRunner()
    assert runner.invoke(cli, ["course", "init", str(tmp_path)]).exit_code == 0
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1]\n")
    res = runner.invoke(cli, ["course", "init", str(tmp_path)])
    assert res.exit_code == 2 and "--force" in res.output
    assert course.read_text() == "steps: [step1]\n"
    assert runner.invoke(cli, ["course", "init", str(tmp_path), "--force"]).exit_code == 0
    assert (tmp_path / "course.yaml.bak").read_text() == "steps: [step1]\n"
    assert "extra_suites: [private/]" in course.read_text()


@pytest.mark.slow
def test_course_init_writes_private_tests_that_pass_on_the_reference(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["course", "init", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    private = sorted(p.name for p in (tmp_path / "c" / "private").iterdir())
    assert private == [f"test_private_step{i}.py" for i in range(1, 6)]
    res = runner.invoke(cli, ["selftest", "--course", str(tmp_path / "c" / "course.yaml"),
                              "--jobs", "2", "-v"])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "selftest passed" in flat
    assert "private tests failing: The lesson's worked example" in flat
    caught = re.search(r"step5: the private tests catch (\d+) catalogued mistakes", flat)
    assert caught and int(caught.group(1)) > 0
    # and grading with it counts the course's points: step5 is worth 2
    sub = tmp_path / "sub"
    sub.mkdir()
    for ex in ("step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum",
               "step5_attention"):
        (sub / f"{ex}.py").write_text(REFERENCE)
    res = runner.invoke(cli, ["grade", str(sub), "--course", str(tmp_path / "c" / "course.yaml"),
                              "--format", "json", "--no-cache"])
    obj = json.loads(res.output)
    assert obj["score"] == obj["max_score"] == 6.0
    names = [t["name"] for s in obj["steps"] for t in s["tests"]]
    assert "The lesson's worked example: one query, three keys" in names


def test_a_private_conftest_that_fails_is_a_course_error(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_mine.py").write_text(GOOD_TEST)
    (private / "conftest.py").write_text("import os\nraise RuntimeError('conftest boom')\n")
    res = _invoke(tmp_path, "steps: [step1]\nextra_suites: [private/]\n")
    assert res.exit_code == 2 and "Interrupted" not in res.output
    assert re.search(r"conftest\.py:2: does not import: RuntimeError: conftest boom", res.output)


def test_a_private_hypothesis_test_runs_in_grade(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_generated.py").write_text(
        "import pytest\nfrom hypothesis import given\n\n"
        "from attn_practice.grader.suites import strategies as S\n\n\n"
        "@pytest.mark.step('step3')\n@given(xa=S.softmax_inputs())\n"
        "def test_generated(step, xa):\n    \"\"\"Softmax on the instructor's generated inputs\"\"\"\n"
        "    x, axis = xa\n    step.check(x, axis=axis)\n")
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step3]\nmax_examples: 5\nextra_suites: [private/]\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "step3_softmax.py").write_text(REFERENCE)
    res = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json",
                                   "--no-cache"])
    obj = json.loads(res.output)
    tests = {t["name"]: t["status"] for t in obj["steps"][0]["tests"]}
    assert tests["Softmax on the instructor's generated inputs"] == "passed"
    assert obj["score"] == obj["max_score"] == 1.0


def test_course_limits_are_applied_to_the_sandboxes(tmp_path):
    """A validated limit is a used limit: memory and timeouts reach the engine's options."""
    from attn_practice.grader.course import load_course
    from attn_practice.grader.staff.batch import options_for

    course = tmp_path / "course.yaml"
    course.write_text("memory_mb: 512\ntimeouts: {step5: 3}\nmax_examples: 7\n")
    options = options_for(load_course(course))
    assert options.limits.memory == 512 * 1024 * 1024 and options.max_examples == 7
    assert options.step_limits["step5"].call_timeout == 3.0
    assert options.step_limits["step5"].memory == 512 * 1024 * 1024


def test_a_test_in_a_file_pytest_would_not_collect_is_a_course_error(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_mine.py").write_text(GOOD_TEST)
    (private / "checks.py").write_text(GOOD_TEST)
    res = _invoke(tmp_path, "steps: [step1]\nextra_suites: [private/]\n")
    assert res.exit_code == 2
    assert re.search(r"checks\.py:6: test_instructor_example would never run: .*test_checks\.py",
                     " ".join(res.output.split())), res.output
