"""Bad input gets a clear message and the right exit code, never a grader traceback.

Each case writes a learner file into a real workspace (made by `attn-practice
start` in tmp_path) and runs `attn-practice check` in-process with CliRunner.
The console-script versions of a few of these live in test_console_script.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import (
    ALL_STEPS,
    assert_clean,
    correct_solutions,
    joined,
    load_catalog,
    run,
    solution_source,
    write_step,
)


def check(ws: Path, step: str = "step1", *extra: str):
    res = run(["check", step, *extra], ws)
    assert_clean(res)
    return res


# ---------------------------------------------------------------- the file itself
def test_syntax_error_names_file_line_and_caret(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return Q @ np.swapaxes(K, -1, -2
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "step1_scores.py has a syntax error on line 4" in text
    assert "was never closed" in text
    assert "return Q @ np.swapaxes(K, -1, -2" in res.stdout
    caret = next(line for line in res.stdout.splitlines() if line.strip() == "^")
    code = next(line for line in res.stdout.splitlines() if "return Q @ np.swapaxes" in line)
    assert caret.index("^") == code.index("(", code.index("swapaxes")), "the caret points at the '('"
    assert "What now" in res.stdout


def test_missing_function_lists_what_the_file_defines(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_score(Q, K):
            return Q @ np.swapaxes(K, -1, -2)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "step1_scores.py has no function named `dot_scores`" in text
    assert "It defines: dot_score" in text
    assert "def dot_scores(Q, K):" in text


def test_empty_file_is_a_missing_function(workspace):
    write_step(workspace, "step1", "")
    res = check(workspace)
    assert res.exit_code == 1
    assert "has no function named `dot_scores`" in joined(res.stdout)


def test_name_that_is_not_callable(workspace):
    write_step(workspace, "step1", "dot_scores = 42\n")
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "`dot_scores` in step1_scores.py is a" in text
    assert "int" in text and "not a function" in text


def test_wrong_signature(workspace):
    write_step(workspace, "step1", """
        def dot_scores(Q):
            return Q
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "`dot_scores(Q)` cannot be called as dot_scores(Q, K)" in text
    assert "Keep the stub's parameters" in text


def test_import_error_inside_the_learners_file(workspace):
    write_step(workspace, "step1", """
        import numpy as np
        import numpyy

        def dot_scores(Q, K):
            return Q @ np.swapaxes(K, -1, -2)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "step1_scores.py could not import something" in text
    assert "No module named 'numpyy'" in text
    assert "step1_scores.py\", line 2, in <module>" in text
    assert "import numpyy" in text


def test_exception_at_import_time(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        SIZE = np.zeros(3)[5]

        def dot_scores(Q, K):
            return Q @ np.swapaxes(K, -1, -2)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "step1_scores.py raised IndexError" in text
    assert "while being imported" in text
    assert "line 3, in <module>" in text


def test_step_file_missing(workspace):
    (workspace / "step1_scores.py").unlink()
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "step1_scores.py is missing from your workspace" in text
    assert "attn-practice reset step1" in text


def test_step_file_not_utf8(workspace):
    (workspace / "step1_scores.py").write_bytes(b"def dot_scores(Q, K):\n    return '\xff'\n")
    res = check(workspace)
    assert res.exit_code == 1
    assert "step1_scores.py is not valid UTF-8 text (line 2)" in joined(res.stdout)


def test_step_file_is_a_directory(workspace):
    (workspace / "step1_scores.py").unlink()
    (workspace / "step1_scores.py").mkdir()
    res = check(workspace)
    assert res.exit_code == 1
    assert "step1_scores.py is a directory, not a Python file" in joined(res.stdout)


# ---------------------------------------------------------------- what the function returns
def test_returns_none(workspace):
    write_step(workspace, "step1", """
        def dot_scores(Q, K):
            scores = Q @ K.swapaxes(-1, -2)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "dot_scores returned None: did you forget a `return` statement?" in text
    # the failing input is shown, the smallest that fails (issue 20 item 5), with its shape
    assert "Q: shape (1, 1), dtype float64" in text
    assert "Reproduce it" in text
    assert "dot_scores(np.array([[" in res.stdout


def test_returns_a_scalar(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return float(np.sum(Q) * np.sum(K))
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "wrong shape: expected (n_q, n_k) = (1, 1), got ()" in text  # the smallest failing input
    assert "Work out the shape on paper" in text


def test_returns_a_string(workspace):
    write_step(workspace, "step1", """
        def dot_scores(Q, K):
            return "scores"
    """)
    res = check(workspace)
    assert res.exit_code == 1
    assert "dot_scores returned str" in joined(res.stdout)
    assert "not an array of numbers" in joined(res.stdout)


def test_wrong_shape(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return K @ np.swapaxes(Q, -1, -2)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert re.search(r"wrong shape: expected \(n_q, n_k\) = \((\d+), (\d+)\), got \(\2, \1\)", text)
    assert "The last two axes look swapped" in text
    assert "scores-transposed" in text


def test_nan_output(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return np.full(Q.shape[:-1] + (K.shape[-2],), np.nan)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "your output has nan at index (0, 0) where the expected value is" in text
    assert "NaN or inf usually means" in text
    # one nonfinite cause is shown once, not once per test
    assert text.count("your output has nan") == 1


def test_inf_output(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return (Q @ np.swapaxes(K, -1, -2)) / 0.0
    """)
    res = check(workspace)
    assert res.exit_code == 1
    assert "your output has inf" in joined(res.stdout) or "your output has -inf" in joined(res.stdout)


def test_wrong_values_show_expected_got_worst_element_and_tolerance(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return Q @ np.swapaxes(K, -1, -2) + 0.001
    """)
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    # the smallest failing input: one query, one key, one column
    assert "wrong values: 1 of 1 entries differ" in text
    assert re.search(r"worst element \(0, 0\): got [-\d.e]+, expected [-\d.e]+", text)
    assert "absolute error 0.001" in text
    assert "atol=1e-09, rtol=1e-07" in text
    assert "expected: [[" in text


def test_exception_shows_only_the_learners_frames(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def helper(Q, K):
            return np.matmul(Q, K)

        def dot_scores(Q, K):
            return helper(Q, K)
    """)
    res = check(workspace)
    assert res.exit_code == 1
    out = res.stdout
    text = joined(out)
    assert "dot_scores raised ValueError" in text
    assert "Your code (most recent call last):" in out
    assert 'step1_scores.py", line 7, in dot_scores' in text
    assert 'step1_scores.py", line 4, in helper' in text
    for frame in ("site-packages", "_pytest", "pytest/", "hypothesis", "attn_practice/", "grader/",
                  "sandbox.py", "launcher.py", "numpy/"):
        assert frame not in out, frame


def test_stub_untouched_is_not_implemented(workspace):
    res = check(workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "dot_scores is not written yet: it still raises NotImplementedError" in text
    assert "attn-practice hint step1" in text


# ---------------------------------------------------------------- later steps using earlier ones
def test_step5_importing_a_failing_step3_is_a_clean_failure(workspace):
    correct_solutions(workspace, ["step1", "step2", "step4"])
    write_step(workspace, "step3", """
        import numpy as np

        def softmax(x, axis=-1):
            e = np.exp(x)
            return e / e.sum(axis=0)
    """)
    (workspace / "step5_attention.py").write_text(solution_source("step5"), encoding="utf-8")
    res = check(workspace, "step5")
    assert res.exit_code == 1
    assert "✗ Step 5" in res.stdout or "! Step 5" in res.stdout
    assert "What now" in res.stdout


def test_step5_importing_a_missing_step3(workspace):
    correct_solutions(workspace, ["step1", "step2", "step4"])
    (workspace / "step3_softmax.py").unlink()
    (workspace / "step5_attention.py").write_text(solution_source("step5"), encoding="utf-8")
    res = check(workspace, "step5")
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "No module named 'step3_softmax'" in text


def test_step5_with_stub_step3_raises_cleanly(workspace):
    correct_solutions(workspace, ["step1", "step2", "step4"])
    (workspace / "step5_attention.py").write_text(solution_source("step5"), encoding="utf-8")
    res = check(workspace, "step5")
    assert res.exit_code == 1
    assert "step3_softmax.py" in res.stdout  # the learner's own frame in their step 3


# ---------------------------------------------------------------- names and places
@pytest.mark.parametrize("command", [["check", "step9"], ["check", "softmax"], ["show", "0"],
                                     ["hint", "stepx"], ["reset", "step2_scales"],
                                     ["solution", "9"]])
def test_unknown_step_lists_the_valid_ones(workspace, command):
    res = run(command, workspace)
    assert_clean(res)
    assert res.exit_code == 2
    text = joined(res.stderr)
    assert f"unknown step {command[1]!r}" in text
    for ex in load_catalog():
        assert ex.id in text and ex.stem in text


@pytest.mark.parametrize("command", [["check"], ["check", "step1"], ["status"], ["hint", "step1"],
                                     ["reset", "step1", "--yes"], ["solution", "step1"], ["hint"]])
def test_outside_any_workspace_says_how_to_start(tmp_path, command):
    res = run(command, tmp_path)
    assert_clean(res)
    assert res.exit_code == 2
    text = joined(res.stderr)
    assert "is not inside an attn-practice workspace" in text
    assert "attn-practice start" in text


def test_every_step_file_can_fail_cleanly(workspace):
    """`check --all` on a workspace where every file is broken in some way: no traceback."""
    broken = ["def f(:\n", "", "x = 1\n", "def {fn}():\n    return 1\n",
              "def {fn}(*args):\n    return None\n", "import nope\n",
              "def {fn}(*args):\n    raise RuntimeError('boom')\n", "def {fn}(*args):\n    return 'x'\n"]
    for ex, src in zip(load_catalog(), broken, strict=True):
        (workspace / ex.file).write_text(src.format(fn=ex.function), encoding="utf-8")
    res = run(["check", "--all"], workspace)
    assert_clean(res)
    assert res.exit_code == 1
    assert "0 of 8 steps passed" in res.stdout
    for step in ALL_STEPS:
        assert f"Step {step[-1]}" in res.stdout
