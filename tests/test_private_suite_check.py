"""A course cannot silently cost a class (issue 19.2).

Through the installed `attn-practice` script: a private test that is wrong or
crashes on the reference stops `grade` before anything is graded (exit 2,
naming test, file, line and what it got); a right one lets grading go on and
is remembered; a private test that crashes on a learner's answer mid-run is a
grader failure (exit 3, a note for staff, no verdict on the student); and
`selftest --course` counts a mistake as "caught by private tests" only when a
sound private test actually fails it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = str(Path(sys.executable).with_name("attn-practice"))
ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()

HEAD = "import numpy as np\nimport pytest\n\n\n"
RIGHT_TEST = HEAD + '''@pytest.mark.step("step2")
def test_right(step):
    """Scaling a 2x2 block by sqrt(4)"""
    step.check(np.ones((2, 2)), 4)
'''
WRONG_TEST = HEAD + '''@pytest.mark.step("step2")
def test_wrong_expectation(step):
    """Expects the scores unscaled"""
    got = step.call(np.ones((2, 2)), 4)
    step.require(bool(np.allclose(got, 1.0)), "scores stay as they are", (np.ones((2, 2)), 4))
'''
CRASHING_TEST = HEAD + '''@pytest.mark.step("step2")
def test_crashes(step):
    """Looks at an entry that is not there"""
    got = step.call(np.ones((2, 2)), 4)
    assert got[5, 5] > 0
'''
#: passes on the reference, crashes on an answer of the wrong shape
FRAGILE_TEST = HEAD + '''@pytest.mark.step("step2")
def test_fragile(step):
    """Reads the corner of the answer"""
    got = np.asarray(step.call(np.ones((2, 2)), 4))
    assert abs(float(got[1, 1]) - 0.5) < 1e-9
'''


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), XDG_DATA_HOME=str(tmp_path / "xdg-data"),
               ATTN_PRACTICE_SECRET="private-check", NO_COLOR="1", COLUMNS="200")
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    return env


def _course(tmp_path: Path, **tests: str) -> Path:
    private = tmp_path / "private"
    private.mkdir(exist_ok=True)
    for name, source in tests.items():
        (private / f"test_{name}.py").write_text(source)
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step2]\nmax_examples: 5\nextra_suites: [private/]\n")
    return course


def _sub(tmp_path: Path, name: str, source: str) -> Path:
    sub = tmp_path / name
    sub.mkdir()
    (sub / "step2_scale.py").write_text(source)
    return sub


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=_env(tmp_path),
                          cwd=tmp_path, timeout=600)


def test_a_wrong_and_a_crashing_private_test_stop_grading_naming_each(tmp_path):
    course = _course(tmp_path, right=RIGHT_TEST, wrong=WRONG_TEST, crash=CRASHING_TEST)
    sub = _sub(tmp_path, "alice", REFERENCE)
    result = _run(tmp_path, "grade", str(sub), "--course", str(course), "--format", "csv")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""  # nothing graded
    err = " ".join(result.stderr.split())
    assert "2 private tests" in err
    assert "test_wrong.py:" in err and "'Expects the scores unscaled'" in err
    assert "fails on the reference solution" in err and "scores stay as they are" in err
    assert "test_crash.py:" in err and "crashes on the reference solution" in err
    assert "IndexError" in err
    assert "Scaling a 2x2 block" not in err
    lines = [ln for ln in result.stderr.splitlines() if "test_wrong.py:" in ln]
    assert lines and "test_wrong.py:5:" in lines[0]  # where the test starts (its decorator)


def test_a_right_private_test_lets_grading_go_on_and_is_checked_once(tmp_path):
    course = _course(tmp_path, right=RIGHT_TEST)
    sub = _sub(tmp_path, "alice", REFERENCE)
    result = _run(tmp_path, "grade", str(sub), "--course", str(course), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "Scaling a 2x2 block by sqrt(4)" in [t["name"] for t in report["steps"][0]["tests"]]
    markers = list((tmp_path / "xdg-cache").rglob("course-checks/*.ok"))
    assert len(markers) == 1
    # a changed course is checked again
    (tmp_path / "private" / "test_wrong.py").write_text(WRONG_TEST)
    again = _run(tmp_path, "grade", str(sub), "--course", str(course), "--format", "json")
    assert again.returncode == 2 and "test_wrong.py" in again.stderr


def test_a_private_test_that_crashes_on_a_learners_answer_is_a_grader_failure(tmp_path):
    course = _course(tmp_path, fragile=FRAGILE_TEST)
    sub = _sub(tmp_path, "bob", "import numpy as np\n\n\ndef scale_scores(scores, d_k):\n"
                                "    return np.zeros(1)\n")
    result = _run(tmp_path, "grade", str(sub), "--course", str(course), "--format", "json")
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)  # the report is still written, with no verdict
    [test] = [t for t in report["steps"][0]["tests"] if t["name"] == "Reads the corner of the answer"]
    assert test["status"] == "error" and "not your fault" in json.dumps(report)
    err = " ".join(result.stderr.split())
    assert "the grader itself failed" in err and "Reads the corner of the answer" in err
    assert str(sub) in err
    assert not list((tmp_path / "xdg-cache").rglob("results/*/*.json"))  # never cached


def test_on_gradescope_a_grader_failure_keeps_the_graded_steps_and_says_which_failed(tmp_path):
    """The same failure through `run_autograder`: the student sees the report, headed by what failed."""
    import shutil

    from attn_practice.grader.staff.ci_setup import gradescope_run

    if shutil.which("bash") is None or shutil.which("timeout") is None:
        pytest.skip("needs bash and timeout")
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    course = _course(tmp_path, fragile=FRAGILE_TEST)
    shutil.copytree(tmp_path / "private", root / "source" / "private")
    (root / "source" / "course.yaml").write_text(course.read_text())
    (root / "submission").mkdir()
    (root / "submission" / "step2_scale.py").write_text(
        "import numpy as np\n\n\ndef scale_scores(scores, d_k):\n    return np.zeros(1)\n")
    script = tmp_path / "run_autograder"
    script.write_text(gradescope_run(course=True))
    script.chmod(0o755)
    env = _env(tmp_path)
    env.update(AUTOGRADER_ROOT=str(root), ATTN_PRACTICE_VENV=str(Path(sys.executable).parent.parent))
    proc = subprocess.run([str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0 and "exited with status 3" in proc.stdout, proc.stdout + proc.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert [t["name"].split(":")[0] for t in data["tests"]] == ["step2"]  # the report, not a blank 0
    assert "The autograder itself failed while grading step2" in data["output"]
    assert "not a verdict" in data["output"] and "Reads the corner of the answer" in json.dumps(data)


def _caught_column(output: str) -> str:
    row = next(ln for ln in output.splitlines() if ln.strip("│┃| ").startswith("step2"))
    return [c.strip() for c in row.replace("┃", "│").split("│") if c.strip()][-1]


def test_selftest_counts_only_mistakes_a_sound_private_test_fails(tmp_path):
    wrong = _course(tmp_path, wrong=WRONG_TEST)
    result = _run(tmp_path, "selftest", "--course", str(wrong), "--step", "step2", "--jobs", "2")
    assert result.returncode == 1
    n = _caught_column(result.stdout).split("/")[1]
    assert _caught_column(result.stdout) == f"0/{n}", result.stdout  # fails right code: catches nothing
    (tmp_path / "private" / "test_wrong.py").unlink()
    (tmp_path / "private" / "test_crash.py").write_text(CRASHING_TEST.replace("got[5, 5]", "got[0, 0]")
                                                       .replace("> 0", "== 0.5 or got[7]"))
    crash = _run(tmp_path, "selftest", "--course", str(wrong), "--step", "step2", "--jobs", "2")
    caught, total = map(int, _caught_column(crash.stdout).split("/"))
    assert total == int(n) and caught == 0, crash.stdout  # crashing on a mistake is no catch


def test_a_grader_that_cannot_run_the_reference_blames_itself_not_the_course(tmp_path, monkeypatch):
    """No sandbox can start (as the poisoned-worker tests make it): exit 3, never a course error."""
    from click.testing import CliRunner

    from attn_practice.cli import cli
    from attn_practice.grader.sandbox.launcher import Launcher

    def broken(self, *args, **kwargs):
        raise RuntimeError("sandbox spawn failed: fork failed: Resource temporarily unavailable")

    course = _course(tmp_path, right=RIGHT_TEST)
    sub = _sub(tmp_path, "alice", REFERENCE)
    monkeypatch.setattr(Launcher, "spawn", broken)
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json"])
    assert result.exit_code == 3, result.output
    assert "could not run the private tests on the reference" in " ".join(result.stderr.split())
    assert "would cost every student" not in result.stderr
