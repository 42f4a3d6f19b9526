"""Gradescope and GitHub output a student can read (issue 19.5, output half).

Graded through the installed script: every check of a step is listed with ✓
or ✗ and its name (the course's private test included), and a failing step's
output names the failing test before anything else.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = str(Path(sys.executable).with_name("attn-practice"))
RIGHT = "import numpy as np\n\n\ndef scale_scores(scores, d_k):\n    return scores / np.sqrt(d_k)\n"
WRONG = "def scale_scores(scores, d_k):\n    return scores / d_k\n"
PRIVATE = '''import numpy as np
import pytest


@pytest.mark.step("step2")
def test_instructors_block(step):
    """The instructor's own 2x2 block"""
    step.check(np.ones((2, 2)), 4)
'''


def _grade(tmp_path: Path, source: str, fmt: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    sub = tmp_path / f"sub-{fmt}-{len(source)}"
    sub.mkdir()
    (sub / "step2_scale.py").write_text(source)
    (tmp_path / "private").mkdir(exist_ok=True)
    (tmp_path / "private" / "test_mine.py").write_text(PRIVATE)
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step2]\nmax_examples: 5\nextra_suites: [private/]\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "c"), XDG_DATA_HOME=str(tmp_path / "d"),
               ATTN_PRACTICE_SECRET="student-output", GITHUB_OUTPUT=str(tmp_path / "gh-output"),
               GITHUB_STEP_SUMMARY=str(tmp_path / "gh-summary.md"))
    result = subprocess.run([SCRIPT, "grade", str(sub), "--course", str(course), "--format", fmt],
                            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    return result, sub


def _json_report(tmp_path: Path, source: str) -> dict:
    sub = tmp_path / f"json-{len(source)}"
    sub.mkdir()
    (sub / "step2_scale.py").write_text(source)
    course = tmp_path / "course.yaml"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "c"), XDG_DATA_HOME=str(tmp_path / "d"),
               ATTN_PRACTICE_SECRET="student-output")
    out = subprocess.run([SCRIPT, "grade", str(sub), "--course", str(course), "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path).stdout
    return json.loads(out)


def test_gradescope_lists_every_check_and_names_the_failing_one_first(tmp_path):
    for source, fmt_status in ((WRONG, "failed"), (RIGHT, "passed")):
        result, _ = _grade(tmp_path, source, "gradescope")
        assert result.returncode in (0, 1), result.stderr
        [test] = json.loads(result.stdout)["tests"]
        report = _json_report(tmp_path, source)
        names = [t["name"] for t in report["steps"][0]["tests"]]
        assert "The instructor's own 2x2 block" in names
        out = test["output"]
        for t in report["steps"][0]["tests"]:
            mark = "✓" if t["status"] == "passed" else "✗"
            assert f"{mark} {t['name']}" in out, (t["name"], out)
        if fmt_status == "failed":
            first_failing = next(t["name"] for t in report["steps"][0]["tests"] if t["status"] != "passed")
            first_line = re.sub(r"\\(.)", r"\1", out.split("\n", 1)[0])  # as Markdown shows it
            assert first_line == f"**Failed: {first_failing}**", out[:200]
            # the failing checks come before the passing ones in the list
            assert out.index("✗ ") < out.index("✓ ")
        else:
            assert f"All {len(names)} checks passed" in out


def test_github_lists_every_check_in_the_result_the_log_and_the_summary(tmp_path):
    result, _ = _grade(tmp_path, WRONG, "github")
    assert result.returncode == 1, result.stderr
    report = _json_report(tmp_path, WRONG)
    tests = report["steps"][0]["tests"]
    first_failing = next(t["name"] for t in tests if t["status"] != "passed")
    encoded = (tmp_path / "gh-output").read_text().split("result=", 1)[1].strip()
    obj = json.loads(base64.b64decode(encoded))
    message = obj["tests"][0]["message"]
    assert message.startswith(f"Failed: {first_failing}")
    summary = (tmp_path / "gh-summary.md").read_text()
    for t in tests:
        line = f"{'✓' if t['status'] == 'passed' else '✗'} {t['name']}"
        assert line in result.stdout, line  # the job log
        assert line in summary, line
    assert "The instructor's own 2x2 block" in result.stdout
