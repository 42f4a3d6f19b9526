"""Messages that send the learner to the right place (issue 13, item 5), as the learner meets them.

A step that fails because of a step it imports names that step's file and
function; `status` marks a pass that leans on a since-changed step as stale;
the worked-example panel's advice fits a file that did not load; `watch`
says "save" and "press h"; piped output never splits a command; a long
check says it is still running, on a terminal only.
"""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from conftest import assert_clean, correct_solutions, joined, run, write_step
from rich.console import Console

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.results import Failure, GradeReport, Status, StepResult
from attn_practice.grader.results import TestResult as Outcome
from attn_practice.grader.teaching.outcome import CheckOutcome
from attn_practice.grader.teaching.screens import render_check, working
from attn_practice.grader.teaching.workspace import Workspace

WRONG_SOFTMAX = """
    import numpy as np

    def softmax(x, axis=-1):
        return np.exp(x)   # never normalised
"""
STEP5_IMPORTING = """
    from step1_scores import dot_scores
    from step2_scale import scale_scores
    from step3_softmax import softmax
    from step4_weighted_sum import weighted_sum


    def attention(Q, K, V):
        weights = softmax(scale_scores(dot_scores(Q, K), Q.shape[-1]), axis=-1)
        return weighted_sum(weights, V)
"""


def commands_whole(text: str) -> None:
    """Every `attn-practice ...` in backticks starts and ends on the same line."""
    for line in text.splitlines():
        for m in re.finditer(r"`attn-practice", line):
            assert "`" in line[m.end():], f"a command split across lines: {line!r}"


# ------------------------------------------------------------ the right file
def test_step5_failing_because_of_step3_names_step3s_file_and_function(workspace):
    correct_solutions(workspace, ["step1", "step2", "step4"])
    write_step(workspace, "step3", WRONG_SOFTMAX)
    write_step(workspace, "step5", STEP5_IMPORTING)
    assert run(["check", "step3"], workspace).exit_code == 1
    res = run(["check", "step5"], workspace)
    assert_clean(res)
    assert res.exit_code == 1
    what_now = joined(res.stdout.split("What now:")[1])
    assert "step3_softmax.py" in what_now and "softmax" in what_now
    assert "attn-practice check step3" in what_now
    assert "attn-practice check step5 --reference-steps" in what_now
    assert "Fix the first problem above in step5_attention.py" not in what_now
    commands_whole(res.stdout)  # the notes that hold commands too
    # the way out it offers works: with the reference step 3, this step 5 passes
    assert run(["check", "step5", "--reference-steps"], workspace).exit_code == 0


def test_a_stub_in_an_imported_step_is_named_in_the_headline(workspace):
    correct_solutions(workspace, ["step1", "step2", "step3"])  # step 4 is still the stub
    write_step(workspace, "step5", STEP5_IMPORTING)
    res = run(["check", "step5"], workspace)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "attention is not written yet" not in text  # the learner's attention is written
    assert "weighted_sum in step4_weighted_sum.py is not written yet" in text
    what_now = text.split("What now:")[1]
    assert "step4_weighted_sum.py" in what_now and "weighted_sum" in what_now
    assert "--reference-steps" in what_now
    commands_whole(res.stdout)


def test_an_own_stub_still_says_its_own_function_is_not_written(workspace):
    res = run(["check", "step5"], workspace)
    text = joined(res.stdout)
    assert "attention is not written yet" in text
    assert "Fix the first problem above in step5_attention.py" in text


@pytest.mark.slow
def test_status_marks_a_pass_stale_when_an_imported_step_is_reset_or_changed(workspace):
    correct_solutions(workspace, ["step1", "step2", "step3", "step4", "step5"])
    assert run(["check", "--all"], workspace).exit_code == 1  # bonus stubs fail
    before = run(["status"], workspace)
    assert "stale:" not in before.stdout and "passed, stale" not in before.stdout
    # reset step 3: step 5 passed with the old softmax
    assert run(["reset", "step3", "--yes"], workspace).exit_code == 0
    after = run(["status"], workspace)
    row = next(line for line in after.stdout.splitlines() if line.strip().startswith("step5"))
    assert "stale" in row
    text = joined(after.stdout)
    assert "step5 passed with an earlier version of step3_softmax.py" in text
    assert "attn-practice check step5" in text
    commands_whole(after.stdout)
    # put the same softmax back and re-check step 3: nothing is stale any more
    correct_solutions(workspace, ["step3"])
    assert run(["check", "step3"], workspace).exit_code == 0
    assert "passed, stale" not in run(["status"], workspace).stdout
    # a change to step 1's file alone makes step 5 stale again (the state says passed)
    (workspace / "step1_scores.py").write_text(
        (workspace / "step1_scores.py").read_text(encoding="utf-8") + "\n# tidied\n", encoding="utf-8")
    assert "passed, stale" in run(["status"], workspace).stdout


# ------------------------------------------------------------ the worked example's advice
def test_the_panels_advice_fits_a_file_that_did_not_load(workspace):
    correct_solutions(workspace, ["step1"])
    write_step(workspace, "step2", """
        import numpy as np

        def scale_scores(scores, d_k)
            return scores / np.sqrt(d_k)
    """)
    correct_solutions(workspace, ["step3"])
    res = run(["check", "step3"], workspace)  # step 3 passes; nothing to show
    assert res.exit_code == 0
    res = run(["check", "step2"], workspace)
    text = joined(res.stdout)
    assert "syntax error" in text and "the lesson's worked example" in text
    assert "✗ did not load" in text and "first difference" not in text
    assert "step2_scale.py did not load, so there are no numbers of yours" in text
    assert "Work that stage out by hand" not in text


# ------------------------------------------------------------ watch's words
def _failing_outcome(ws) -> CheckOutcome:
    ex = load_catalog()[0]
    failure = Failure(kind="not-implemented", summary="dot_scores is not written yet",
                      hint="Open the file, replace the `raise NotImplementedError(...)` line with "
                           "your code, and check again. `attn-practice hint` helps you start.")
    step = StepResult(id=ex.id, title=ex.title, status=Status.FAILED, score=0, max_score=1,
                      file=ex.file, function=ex.function,
                      tests=(Outcome("worked example", Status.FAILED, failure.summary, failure),))
    state = Workspace(ws).load_state()
    return CheckOutcome(GradeReport(str(ws), (step,)), state, ex, {e.id: len(e.hints) for e in load_catalog()})


def test_watch_says_save_and_press_h(workspace):
    buf = io.StringIO()
    render_check(Console(file=buf, width=100), _failing_outcome(workspace), watching=True)
    text = joined(buf.getvalue())
    assert "Save step1_scores.py" in text and "press h" in text.lower()
    assert "check again" not in text
    assert "attn-practice hint" not in text and "attn-practice check step1` again" not in text
    buf = io.StringIO()
    render_check(Console(file=buf, width=100), _failing_outcome(workspace))
    plain = joined(buf.getvalue())
    assert "Run `attn-practice check step1` again" in plain and "attn-practice hint step1" in plain


def test_the_watch_loop_draws_with_watchs_words(workspace):
    from test_watch import FakeKeys, make_loop

    loop, console, _files, _checker = make_loop(workspace, FakeKeys())
    loop.begin()
    text = joined(console.export_text())
    assert "Save step1_scores.py and watch checks it again" in text
    assert "press h" in text and "attn-practice hint step1" not in text


# ------------------------------------------------------------ piped output keeps commands whole
def test_piped_check_and_status_never_split_a_command(workspace):
    write_step(workspace, "step1", """
        import numpy as np

        def dot_scores(Q, K):
            return Q @ K.T
    """)
    res = run(["check", "step1"], workspace)
    assert res.exit_code == 1
    what_now = res.stdout.split("What now:")[1]
    commands_whole(what_now)
    assert re.search(r"^  Stuck\? `attn-practice hint step1` .*`attn-practice show step1`\.$",
                     what_now, flags=re.M)
    commands_whole(run(["status"], workspace).stdout)
    shown = run(["show", "step1"], workspace).stdout
    assert "When ready: attn-practice check step1    (stuck? attn-practice hint step1)" in shown


# ------------------------------------------------------------ still running
def _terminal(buf: io.StringIO) -> Console:
    return Console(file=buf, force_terminal=True, width=120, color_system=None)


def test_a_long_check_says_it_is_still_running_on_a_terminal():
    buf = io.StringIO()
    seen = threading.Event()
    with working(_terminal(buf), "Checking step3…", after=0.0, tick=0.02):
        deadline = time.monotonic() + 30  # a deadline, not a timing assertion
        while time.monotonic() < deadline and "still running" not in buf.getvalue():
            time.sleep(0.02)
        seen.set()
    assert "still running" in buf.getvalue() and "Checking step3" in buf.getvalue()


def test_nothing_extra_when_piped():
    buf = io.StringIO()
    piped = Console(file=buf, width=80)
    with working(piped, "Checking step3…", after=0.0, tick=0.01):
        time.sleep(0.05)
    assert buf.getvalue() == ""


def test_a_quick_check_never_says_still_running():
    buf = io.StringIO()
    with working(_terminal(buf), "Checking step3…", after=3600):
        pass
    assert "still running" not in buf.getvalue()
