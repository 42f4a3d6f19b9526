"""The learner's commands: help, step names, show, status, check, solution, and the report layout."""

from __future__ import annotations

import io
import re

import pytest
from click.testing import CliRunner
from conftest import (
    CORE,
    assert_clean,
    chdir,
    correct_solutions,
    joined,
    load_catalog,
    make_workspace,
    run,
    write_step,
)
from rich.console import Console

from attn_practice.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_PASSED, EXIT_USAGE, cli
from attn_practice.grader.reports.terminal import render_step
from attn_practice.grader.results import Failure, GradeReport, Status, StepResult
from attn_practice.grader.results import TestResult as Outcome
from attn_practice.grader.teaching.screens import render_check

LEARNER_COMMANDS = ["start", "check", "hint", "status", "reset", "show", "solution"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------- help and names
@pytest.mark.parametrize("command", LEARNER_COMMANDS + ["grade"])
def test_every_command_has_help_with_an_example(tmp_path, command):
    res = run([command, "--help"], tmp_path)
    assert res.exit_code == 0, res
    assert "Example" in res.stdout
    assert f"attn-practice {command}" in res.stdout


def test_top_level_help_and_version(tmp_path):
    res = run(["--help"], tmp_path)
    assert res.exit_code == 0
    for command in LEARNER_COMMANDS:
        assert command in res.stdout
    assert "attn-practice start" in res.stdout
    version = run(["--version"], tmp_path)
    assert version.exit_code == 0 and "attn-practice" in version.stdout


def test_exit_code_constants():
    assert (EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL) == (0, 1, 2, 3)


@pytest.mark.parametrize("args", [["nonsense"], ["check", "--bogus"], ["show", "1", "2"],
                                  ["check", "step1", "--all"]])
def test_usage_errors_exit_2(module_workspace, args):
    res = run(args, module_workspace)
    assert_clean(res)
    assert res.exit_code == 2


@pytest.mark.parametrize("name", ["step2", "2", "step2_scale", "STEP2", "step2_scale.py", " 2 "])
def test_step_names_are_accepted_in_every_form(tmp_path, name):
    res = run(["show", name], tmp_path)
    assert res.exit_code == 0, res
    assert "step2 (step) · the lesson" in res.stdout
    assert "Implement scale_scores(scores, d_k) in step2_scale.py" in joined(res.stdout)


def test_internal_errors_exit_3_without_a_traceback(module_workspace, monkeypatch):
    from attn_practice.grader.teaching import screens

    def boom(*a, **k):
        raise RuntimeError("something broke")

    monkeypatch.setattr(screens, "render_status", boom)
    res = run(["status"], module_workspace)
    assert res.exit_code == 3
    assert "internal error: RuntimeError: something broke" in joined(res.stderr)
    assert "not in your code" in joined(res.stderr)
    assert "Traceback" not in res.output


def test_runner_in_non_standalone_mode_returns_the_code(module_workspace):
    with chdir(module_workspace):
        assert cli.main(["status"], standalone_mode=False) == 0


# ---------------------------------------------------------------- show
@pytest.mark.parametrize("ex", load_catalog(), ids=lambda e: e.id)
def test_show_each_step(tmp_path, ex):
    res = run(["show", ex.id], tmp_path)  # works outside a workspace too
    assert_clean(res)
    assert res.exit_code == 0
    text = joined(res.stdout)
    assert f"{ex.id} ({'bonus step' if ex.bonus else 'step'}) · the lesson" in text
    assert ex.title in text
    # the task names the function and the file once, not once in a header and again below it
    assert f"Implement {ex.signature} in {ex.file}" in text
    assert text.count(f"{ex.signature} in {ex.file}") == 1
    assert "Write " + ex.signature not in text
    for line in res.stdout.splitlines():
        assert len(line) <= 80 or "attn-practice " in line, line  # commands are never split
    first_heading = next(line for line in ex.lesson.splitlines() if line.startswith("#"))
    assert first_heading.lstrip("# ").strip() in text
    assert f"attn-practice check {ex.id}" in text


def test_show_without_a_step_shows_the_current_one(workspace):
    res = run(["show"], workspace)
    assert res.exit_code == 0
    assert "step1 (step)" in res.stdout


# ---------------------------------------------------------------- status
def test_status_table(workspace):
    run(["hint", "step2"], workspace)
    run(["hint", "step2"], workspace)
    res = run(["status"], workspace)
    assert_clean(res)
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    header = next(line for line in lines if "step" in line and "title" in line)
    for col in ("step", "title", "state", "hints used"):
        assert col in header
    for ex in load_catalog():
        row = next(line for line in lines if line.strip().startswith(ex.id))
        assert "not started" in row
        assert ex.title.split(":")[0] in row
        used = 2 if ex.id == "step2" else 0
        assert f"{used}/{len(ex.hints)}" in row
        assert ("(bonus)" in row) == ex.bonus
    assert "Core steps passed: 0/5" in res.stdout
    assert "Next: step1" in joined(res.stdout)
    for line in lines:  # piped: the table fits 80 columns; a line holding commands stays whole
        assert len(line.rstrip()) <= 80 or "attn-practice " in line, line


def test_status_wide_terminal_shows_full_titles(workspace):
    with chdir(workspace):
        res = CliRunner().invoke(cli, ["status"], env={"COLUMNS": "160"})
    assert load_catalog()[0].title in res.stdout


# ---------------------------------------------------------------- check: the stub and progress
def test_check_on_the_untouched_stub(workspace):
    res = run(["check"], workspace)
    assert_clean(res)
    assert res.exit_code == 1
    assert "Checking step1 (step1_scores.py), the first step you have not passed yet." in res.stdout
    assert "not written yet" in res.stdout
    status = run(["status"], workspace)
    row = next(line for line in status.stdout.splitlines() if line.strip().startswith("step1"))
    assert "failed" in row
    assert "Core steps passed: 0/5" in status.stdout


def test_solution_is_locked_until_the_step_passes(workspace):
    res = run(["solution", "step1"], workspace)
    assert_clean(res)
    assert res.exit_code == 1
    assert "step1 has not passed yet" in joined(res.stderr)
    assert "attn-practice hint step1" in joined(res.stderr)


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A workspace holding correct solutions of the core steps (bonus steps: stubs)."""
    ws = make_workspace(tmp_path_factory.mktemp("solved"))
    correct_solutions(ws, CORE)
    return ws


def test_check_passes_every_core_step_in_order_then_moves_on(solved):
    """`check` with no step checks the first step not yet passed, and moves on after a pass."""
    for i, step in enumerate(CORE):
        res = run(["check"], solved)
        assert_clean(res)
        assert res.exit_code == 0, res
        assert f"Checking {step} (" in res.stdout
        assert f"✓ Step {i + 1} ·" in res.stdout
        assert "✗" not in res.stdout
        nxt = load_catalog()[i + 1]
        assert f"Passed {step}. Next: {nxt.id} · {nxt.title}" in joined(res.stdout)
    status = run(["status"], solved)
    assert "Core steps passed: 5/5" in status.stdout
    for step in CORE:
        row = next(line for line in status.stdout.splitlines() if line.strip().startswith(step))
        assert "passed" in row
    # the next `check` moves on to the first bonus step (a stub: it fails)
    res = run(["check"], solved)
    assert_clean(res)
    assert res.exit_code == 1
    assert "Checking step6 (" in res.stdout


def test_solution_after_a_pass(solved):
    if "passed" not in (solved / "attn-practice.yaml").read_text(encoding="utf-8"):
        assert run(["check", "step3"], solved).exit_code == 0
    res = run(["solution", "step3"], solved)
    assert_clean(res)
    assert res.exit_code == 0
    assert "def softmax(x" in res.stdout
    assert "reference softmax (step3)" in res.stdout


def test_hints_stay_readable_after_a_pass(solved):
    if "passed" not in (solved / "attn-practice.yaml").read_text(encoding="utf-8"):
        assert run(["check", "step1"], solved).exit_code == 0
    run(["hint", "step1"], solved)
    res = run(["hint", "step1"], solved)
    assert res.exit_code == 0
    assert "hint 1 of" in res.stdout and "hint 2 of" in res.stdout


def test_check_with_everything_passed(tmp_path):
    ws = make_workspace(tmp_path)
    from attn_practice.grader.teaching.workspace import Progress, Workspace

    def all_passed(state):
        for ex in load_catalog():
            state.step(ex.id).status = Progress.PASSED

    Workspace(ws).update_state(all_passed)
    res = run(["check"], ws)
    assert res.exit_code == 0
    assert "Every step has passed" in res.stdout


def test_a_step_that_passed_then_broke_is_failed_again(tmp_path):
    ws = make_workspace(tmp_path)
    correct_solutions(ws, ["step2"])
    assert run(["check", "2"], ws).exit_code == 0
    write_step(ws, "step2", "def scale_scores(scores, d_k):\n    return scores\n")
    res = run(["check", "2"], ws)
    assert res.exit_code == 1
    assert "no-scale" in res.stdout
    status = run(["status"], ws)
    row = next(line for line in status.stdout.splitlines() if line.strip().startswith("step2"))
    assert "failed" in row
    assert run(["solution", "2"], ws).exit_code == 0  # earned once, stays unlocked


# ---------------------------------------------------------------- the report's layout
def _failing_step() -> StepResult:
    failure = Failure(
        kind="value",
        summary="wrong values: 3 of 3 entries differ; the worst, at index (0, 1), is 0.001 but "
                "should be 0",
        details="worst element (0, 1): got 0.001, expected 0.0\n"
                "absolute error 0.001, relative error inf; allowed |got - expected| <= atol + "
                "rtol*|expected| with atol=1e-09, rtol=1e-07\n"
                "Q: shape (1, 4), dtype float64\n  [[1. 0. 1. 0.]]",
        repro="dot_scores(np.array([[1., 0., 1., 0.]]), np.array([[1., 0., 1., 0.], [0., 1., 0., 1.], "
              "[1., 0., 0., 0.]]))",
        traceback='  File "/a/very/long/path/that/goes/on/and/on/and/on/to/the/workspace/'
                  'step1_scores.py", line 3, in dot_scores\n    return Q @ K.T + 0.001',
        hint="Compare your numbers with the expected ones on this small input by hand.",
    )
    long_name = ("Leading batch dimensions are kept: (..., n_q, d_k) x (..., n_k, d_k) -> "
                 "(..., n_q, n_k), even with several of them")
    return StepResult(
        id="step1", title="Scores: how well does each query match each key?", status=Status.FAILED,
        score=0, max_score=1, file="step1_scores.py", function="dot_scores",
        tests=(Outcome("The lesson's worked example", Status.PASSED),
               Outcome(long_name, Status.FAILED, failure.summary, failure)),
        notes=("your function returned float64 for float32 input (not judged, but worth knowing)",),
        output="hello from the learner\n" * 3,
    )


def _render(**console_options) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=80, **console_options)
    render_step(console, _failing_step())
    return buf.getvalue()


def test_report_fits_80_columns_and_keeps_test_names_whole():
    out = _render()
    step = _failing_step()
    repro_lines = {"from step1_scores import dot_scores; import numpy as np", step.tests[1].failure.repro}
    for line in out.splitlines():
        if line in repro_lines:
            continue  # soft-wrapped on purpose: one line to copy
        assert len(line) <= 80, line
        assert line == line.rstrip(), f"trailing spaces: {line!r}"
    text = joined(out)
    for t in step.tests:
        assert t.name in text
    # a wrapped test name continues under itself, not under the icon
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("  ✗ Leading batch"))
    assert lines[i + 1].startswith("    ") and not lines[i + 1].startswith("     ")
    # the failure: summary, expected vs got, worst element, errors, tolerance, repro, next
    for phrase in ("wrong values: 3 of 3 entries differ", "worst element (0, 1)", "absolute error 0.001",
                   "atol=1e-09, rtol=1e-07", "Q: shape (1, 4)", "Your code (most recent call last):",
                   "Reproduce it", "Next: Compare your numbers", "Your code printed:",
                   "note: your function returned float64"):
        assert phrase in text, phrase
    # the repro snippet is pasteable: unindented, whole lines
    assert "\n" + step.tests[1].failure.repro + "\n" in out
    assert "\nfrom step1_scores import dot_scores; import numpy as np\n" in out


def test_plain_text_when_piped_and_no_color_honoured(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    piped = _render()
    assert "\x1b[" not in piped
    coloured = _render(force_terminal=True, color_system="standard")
    assert "\x1b[31m" in coloured or "\x1b[1;31m" in coloured  # red ✗ on a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    no_color = _render(force_terminal=True, color_system="standard")
    colour_codes = [c for c in ANSI.findall(no_color) if re.search(r"\[(?:\d+;)*3[0-7]m", c)]
    assert colour_codes == []


def test_learner_text_is_not_interpreted_as_markup():
    step = _failing_step()
    from dataclasses import replace

    odd = replace(step, output="[bold red]not markup[/] :smile: \x1b[31mred\x1b[0m\n")
    buf = io.StringIO()
    render_step(Console(file=buf, width=80), odd)
    out = buf.getvalue()
    assert "[bold red]not markup[/]" in out
    assert ":smile:" in out
    assert "\x1b" not in out


def test_render_check_for_a_missing_step():
    from attn_practice.grader.teaching.practice import CheckOutcome
    from attn_practice.grader.teaching.workspace import State

    step = StepResult(id="step2", title="Scale", status=Status.MISSING, score=0, max_score=1,
                      file="step2_scale.py", function="scale_scores",
                      error="step2_scale.py was not found in the submission")
    outcome = CheckOutcome(GradeReport("ws", (step,)), State(), load_catalog()[1], {"step2": 3})
    buf = io.StringIO()
    render_check(Console(file=buf, width=80), outcome)
    text = joined(buf.getvalue())
    assert "step2_scale.py is missing from your workspace" in text
    assert "attn-practice reset step2" in text


def test_the_cli_imports_optional_command_groups_only_when_used():
    import subprocess
    import sys

    code = ("import sys, attn_practice.cli as c\n"
            "lazy = ['attn_practice.grader.staff.ci_setup', 'attn_practice.grader.commands.teaching',\n"
            "        'attn_practice.grader.commands.selftest']\n"
            "assert not [m for m in lazy if m in sys.modules], 'imported too early'\n"
            "from click.testing import CliRunner\n"
            "assert CliRunner().invoke(c.cli, ['ci', '--help']).exit_code == 0\n"
            "assert 'attn_practice.grader.staff.ci_setup' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_exit_now_runs_exit_handlers_flushes_and_keeps_the_code():
    import subprocess
    import sys

    code = ("import atexit, sys\n"
            "from attn_practice.cli import exit_now\n"
            "atexit.register(lambda: print(' handler ran', end=''))\n"
            "print('unflushed', end='')\n"
            "sys.stderr.write('err')\n"
            "exit_now(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stdout == "unflushed handler ran" and done.stderr == "err"
