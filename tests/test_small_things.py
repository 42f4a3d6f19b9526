"""The small things of issue 20.7, each checked where the learner meets it.

The workspace README lists watch, serve, explore and solution; `serve`
prints no Hypothesis deprecation notes into the learner's terminal; the
page's task section says what to write once. (`watch`'s "press h" is in
test_watch.py; the focus kept on the heatmap after a check in
test_serve_truth_browser.py.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run
from serve_helpers import Served


def test_the_workspace_readme_lists_every_learner_command(tmp_path):
    assert run(["start", "ws"], tmp_path).exit_code == 0
    readme = (tmp_path / "ws" / "README.md").read_text()
    for command in ("show", "check", "hint", "status", "reset", "watch", "serve",
                    "explore sentence", "solution"):
        assert f"attn-practice {command}" in readme, command


def test_serve_keeps_hypothesis_deprecation_notes_out_of_the_terminal():
    code = ("import warnings\n"
            "from attn_practice.grader.commands.serve import _quiet_hypothesis\n"
            "from hypothesis.errors import HypothesisDeprecationWarning\n"
            "_quiet_hypothesis()\n"
            "warnings.warn(HypothesisDeprecationWarning('note_deprecation(...)'))\n"
            "warnings.warn(UserWarning('a real warning still shows'))\n")
    got = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert "HypothesisDeprecationWarning" not in got.stderr and "note_deprecation" not in got.stderr
    assert "a real warning still shows" in got.stderr


@pytest.mark.slow
def test_serve_says_nothing_but_its_own_lines_through_checks(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        (tmp_path / "ws" / "step1_scores.py").write_text(
            "import numpy as np\n\ndef dot_scores(Q, K):\n    return Q @ K.T\n")
        assert s.post_json("/api/step/step1/check", {})[0] == 200
        assert s.get_json("/api/widget/example")[0] == 200
    finally:
        out, err = s.stop()
    assert "Warning" not in err and "note_deprecation" not in err, err
    assert out == ""


def test_the_task_section_says_what_to_write_once(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        status, _, page = s.request("GET", "/")
        assert status == 200 and b'id="signature"' not in page  # no "Write ... in ..." line of its own
        for n in range(1, 9):
            task = s.get_json(f"/api/step/step{n}")[1]["task_html"]
            assert task.count("Implement") + task.count("Write <code>") <= 1, task
    finally:
        s.stop()
