"""The installed `attn-practice` console script and `python -m attn_practice`, in subprocesses.

These pin what CliRunner cannot see: the real entry point's exit codes,
stdout/stderr split, piping (plain text) and NO_COLOR / FORCE_COLOR.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import TRACEBACK, assert_clean, correct_solutions, joined, run_script, write_step

COLOUR = re.compile(r"\x1b\[(?:\d+;)*3[0-7](?:;\d+)*m")


@pytest.fixture(scope="module")
def script_ws(tmp_path_factory):
    parent = tmp_path_factory.mktemp("script")
    res = run_script(["start", "ws"], parent)
    assert res.exit_code == 0, res
    assert "Created your workspace" in res.stdout
    return parent / "ws"


def test_python_dash_m_help():
    proc = subprocess.run([sys.executable, "-m", "attn_practice", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "attn-practice start" in proc.stdout
    assert "check" in proc.stdout and "status" in proc.stdout


def test_python_dash_m_maps_exit_codes(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "attn_practice", "status"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "attn-practice start" in proc.stderr


def test_check_on_the_stub_exits_1_in_plain_text(script_ws):
    res = run_script(["check", "step1"], script_ws)
    assert_clean(res)
    assert res.exit_code == 1
    assert "not written yet" in res.stdout
    assert "\x1b[" not in res.output  # piped: plain text
    assert res.stderr == ""


def test_syntax_error_via_the_script(script_ws):
    write_step(script_ws, "step2", "def scale_scores(scores, d_k)\n    return scores\n")
    res = run_script(["check", "2"], script_ws)
    assert_clean(res)
    assert res.exit_code == 1
    assert "step2_scale.py has a syntax error on line 1" in joined(res.stdout)


def test_outside_a_workspace_via_the_script(tmp_path):
    res = run_script(["check", "step1"], tmp_path)
    assert res.exit_code == 2
    assert TRACEBACK not in res.output
    assert "attn-practice start" in res.stderr
    assert res.stdout == ""


def test_unknown_step_via_the_script(script_ws):
    res = run_script(["hint", "step12"], script_ws)
    assert res.exit_code == 2
    assert TRACEBACK not in res.output
    assert "unknown step 'step12'. Valid steps: step1 (step1_scores)" in joined(res.stderr)


def test_usage_error_via_the_script(script_ws):
    res = run_script(["check", "--no-such-option"], script_ws)
    assert res.exit_code == 2
    assert "No such option" in res.stderr


def test_reset_with_confirmation_via_the_script(script_ws):
    write_step(script_ws, "step4", "# my weighted sum\n")
    no = run_script(["reset", "step4"], script_ws, input="n\n")
    assert no.exit_code == 0 and "Nothing changed." in no.stdout
    assert (script_ws / "step4_weighted_sum.py").read_text(encoding="utf-8") == "# my weighted sum\n"
    yes = run_script(["reset", "step4"], script_ws, input="y\n")
    assert_clean(yes)
    assert yes.exit_code == 0
    backups = list((script_ws / "backups").glob("step4_weighted_sum-*.py"))
    assert [b.read_text(encoding="utf-8") for b in backups] == ["# my weighted sum\n"]


def test_passing_check_exits_0_via_the_script(script_ws):
    correct_solutions(script_ws, ["step1"])
    res = run_script(["check", "step1"], script_ws)
    assert_clean(res)
    assert res.exit_code == 0
    assert "Passed step1. Next: step2" in joined(res.stdout)


def test_colours_only_when_asked_and_no_color_wins(script_ws):
    forced = run_script(["status"], script_ws, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert forced.exit_code == 0
    assert COLOUR.search(forced.stdout), "FORCE_COLOR should colour the output"
    plain = run_script(["status"], script_ws, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.exit_code == 0
    assert not COLOUR.search(plain.stdout), "NO_COLOR must switch colours off"


def _run_in_a_pty(args: list[str], cwd, timeout: float = 180) -> str:
    """Run the console script with a terminal as stdout (as a learner does); return all it wrote."""
    import os
    import pty
    import select
    import shutil
    import time

    exe = shutil.which("attn-practice")
    assert exe, "the attn-practice console script is not installed (pip install -e .)"
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120", "LINES": "40"}
    for name in ("NO_COLOR", "FORCE_COLOR", "ATTN_PRACTICE_DEBUG"):
        env.pop(name, None)
    proc = subprocess.Popen([exe, *args], cwd=cwd, stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_a_slow_check_says_it_is_still_running_on_a_terminal_only(tmp_path):
    res = run_script(["start", "ws"], tmp_path)
    assert res.exit_code == 0
    ws = tmp_path / "ws"
    write_step(ws, "step1", """
        import time

        import numpy as np

        CALLS = [0]

        def dot_scores(Q, K):
            CALLS[0] += 1
            if CALLS[0] <= 12:
                time.sleep(0.3)   # correct, but slow at first: the check takes a few seconds
            return Q @ np.swapaxes(K, -1, -2)
    """)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", _run_in_a_pty(["check", "step1"], ws))
    assert "Checking step1…" in screen  # the spinner's text
    assert "still running after" in screen, screen[-2000:]
    assert "✓ Step 1" in screen
    piped = run_script(["check", "step1"], ws)
    assert "✓ Step 1" in piped.stdout
    assert "still running" not in piped.output and "Checking step1…" not in piped.output
