"""Issue 10's seams in the learner's layer, tested the way a learner meets them.

Renderers only draw (the worked example is computed during the check and
travels on the outcome); the "See it at work" line; progress states as an
enum with the state file's strings unchanged; one step-name parser; one
source for the lesson's data; no import guards around our own modules.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import CORE, assert_clean, correct_solutions, joined, make_workspace, run, write_step
from rich.console import Console

import attn_practice
from attn_practice.exercises.lesson_data import load_sentence, worked_example
from attn_practice.grader.catalog import parse_step_name, resolve_step, step_number
from attn_practice.grader.results import GradeReport, Status, StepResult
from attn_practice.grader.teaching.outcome import CheckOutcome
from attn_practice.grader.teaching.screens import render_check
from attn_practice.grader.teaching.worked_example import Row
from attn_practice.grader.teaching.workspace import STATE_FILE, Progress, State, Workspace
from attn_practice.reference import attention as reference

PACKAGE = Path(attn_practice.__file__).resolve().parent
DRAWING_MODULES = ("grader/teaching/screens.py", "grader/teaching/explore_render.py")


def _imports(path: Path) -> set[str]:
    """Every module a file imports, top level and inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


# ------------------------------------------------------------ renderers only draw
@pytest.mark.parametrize("module", DRAWING_MODULES)
def test_drawing_modules_reach_no_sandbox_engine_or_cli(module):
    imported = _imports(PACKAGE / module)
    for forbidden in ("attn_practice.cli", "attn_practice.grader.sandbox", "attn_practice.grader.engine",
                      "attn_practice.grader.teaching.practice",
                      "attn_practice.grader.teaching.worked_example"):
        assert not [m for m in imported if m.startswith(forbidden)], (module, forbidden)


def test_run_check_has_no_then_and_the_outcome_holds_no_launcher():
    import inspect

    from attn_practice.grader.teaching import practice

    assert "then" not in inspect.signature(practice.run_check).parameters
    assert not hasattr(CheckOutcome(GradeReport("x"), State(), None, {}), "launcher")


def test_the_worked_example_is_drawn_from_the_outcome_alone():
    """A screen given rows draws them; it needs no workspace, no label turned into a path."""
    ex = worked_example()
    got = np.array([[0.5, 0.0, 0.25]])
    rows = (Row("scores", "step1", "dot_scores(q, K)", reference.dot_scores(ex.Q, ex.keys),
                reference.dot_scores(ex.Q, ex.keys), True),
            Row("scaled", "step2", "scale_scores(scores, 4)", np.array([[1.0, 0.0, 0.5]]), got, False,
                first_divergence=True))
    step = StepResult(id="step2", title="Scale", status=Status.FAILED, score=0, max_score=1,
                      file="step2_scale.py", function="scale_scores")
    outcome = CheckOutcome(GradeReport("/nonexistent/label", (step,)), State(),
                           resolve_step("step2"), {"step2": 3}, worked_example=rows)
    buf = io.StringIO()
    render_check(Console(file=buf, width=80), outcome)
    text = joined(buf.getvalue())
    assert "the lesson's worked example, computed by your code" in text
    assert "[0.5, 0, 0.25]" in text and "first differ at scaled" in text
    assert "V = [[10, 0], [0, 5], [2, 2]]" in text


def test_a_failed_check_shows_the_worked_example_computed_by_the_learners_code(workspace):
    correct_solutions(workspace, ["step1"])
    write_step(workspace, "step2", """
        import numpy as np

        def scale_scores(scores, d_k):
            return np.asarray(scores) / d_k
    """)
    res = run(["check", "step2"], workspace)
    assert_clean(res)
    assert res.exit_code == 1
    text = joined(res.stdout)
    assert "the lesson's worked example, computed by your code" in text
    assert "[0.5, 0, 0.25]" in text and "Your numbers first differ at scaled" in text


# ------------------------------------------------------------ See it at work
@pytest.mark.slow
def test_see_it_at_work_prints_once_the_core_steps_pass(tmp_path):
    ws = make_workspace(tmp_path)
    correct_solutions(ws, CORE)
    first = run(["check", "step1"], ws)
    assert "See it at work" not in first.stdout  # steps 2-5 still to do
    for step in ("step2", "step3", "step4"):
        assert "See it at work" not in run(["check", step], ws).stdout
    res = run(["check", "step5"], ws)
    assert "See it at work: attn-practice explore sentence" in res.stdout, res
    everything = run(["check", "--all"], ws)  # the bonus stubs fail, the core is done
    assert everything.exit_code == 1
    assert "See it at work: attn-practice explore sentence" in everything.stdout
    # ... and the command it names exists and runs the learner's code now
    shown = run(["explore", "sentence"], ws)
    assert shown.exit_code == 0 and "computed with your code" in shown.stdout


def test_a_broken_lazy_command_group_is_an_internal_error_not_no_such_command(tmp_path, monkeypatch):
    from attn_practice import cli as cli_module

    monkeypatch.setitem(cli_module.LAZY_COMMANDS, "broken", (".grader.teaching.no_such_module", "x"))
    monkeypatch.setenv("ATTN_PRACTICE_DEBUG", "")
    res = run(["broken"], tmp_path)
    assert res.exit_code == 3, res
    assert "internal error" in res.output and "No such command" not in res.output


def test_no_import_guard_around_our_own_modules_in_the_teaching_layer():
    files = [PACKAGE / "cli.py", *sorted((PACKAGE / "grader" / "teaching").glob("*.py")),
             *sorted((PACKAGE / "grader" / "commands").glob("*.py"))]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            guards = [h for h in node.handlers if isinstance(h.type, ast.Name)
                      and h.type.id in ("ImportError", "ModuleNotFoundError")]
            own = [m for stmt in node.body for m in _imports_of(stmt) if m.startswith(("attn_practice", "."))]
            assert not (guards and own), f"{path.name}:{node.lineno} guards {own}"


def _imports_of(stmt: ast.stmt) -> list[str]:
    out = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            out.append(".dynamic")
    return out


# ------------------------------------------------------------ progress states
def test_progress_is_an_enum_and_the_state_file_keeps_its_strings(workspace):
    old = ("# an old state file, written before states were an enum\n"
           "attn-practice: 0.0.9\ncreated: '2026-01-01T00:00:00'\nsteps:\n"
           "  step1: {status: passed, hints: 1, attempts: 2, passed_at: '2026-01-01T00:01:00'}\n"
           "  step2: {status: failed, hints: 0, attempts: 1, passed_at: ''}\n"
           "  step3: {status: finished, hints: 0, attempts: 0, passed_at: ''}\n")
    (workspace / STATE_FILE).write_text(old, encoding="utf-8")
    ws = Workspace(workspace)
    state = ws.load_state()
    assert state.step("step1").status is Progress.PASSED and state.step("step1").passed
    assert state.step("step2").status is Progress.FAILED
    assert state.step("step3").status is Progress.NOT_STARTED  # an unknown string: not started
    state.step("step4").status = "failed"  # a string assigned is stored as the enum
    assert state.step("step4").status is Progress.FAILED
    with pytest.raises(ValueError):
        state.step("step4").status = "finished"
    ws.save_state(state)
    saved = yaml.safe_load((workspace / STATE_FILE).read_text(encoding="utf-8"))["steps"]
    assert {k: v["status"] for k, v in saved.items()}["step1"] == "passed"
    assert saved["step3"]["status"] == "not started" and saved["step4"]["status"] == "failed"
    res = run(["status"], workspace)
    assert "✓ passed" in res.stdout and "✗ failed" in res.stdout and "· not started" in res.stdout


# ------------------------------------------------------------ one step-name parser
@pytest.mark.parametrize(("name", "number", "stem"), [
    ("step2", 2, None), ("2", 2, None), (2, 2, None), ("step2_scale", 2, "step2_scale"),
    ("STEP2_Scale.py", 2, "step2_scale"), (" 12 ", 12, None),
])
def test_one_parser_for_every_spelling(name, number, stem):
    parsed = parse_step_name(name)
    assert parsed is not None and (parsed.number, parsed.stem) == (number, stem)
    assert parsed.id == f"step{number}" and step_number(name) == number


@pytest.mark.parametrize("name", ["", "step", "step0", "x2", "2_scale", "step2-scale", True, "step 2"])
def test_what_is_not_a_step_name(name):
    assert parse_step_name(name) is None and step_number(name) == 0


def test_a_stem_must_be_the_steps_own(tmp_path):
    res = run(["show", "step2_softmax"], tmp_path)
    assert res.exit_code == 2 and "unknown step 'step2_softmax'" in res.output
    assert run(["show", "step3_softmax.py"], tmp_path).exit_code == 0


def test_the_state_file_lists_steps_in_number_order(workspace):
    ws = Workspace(workspace)
    state = ws.load_state()
    ws.save_state(state)
    saved = yaml.safe_load((workspace / STATE_FILE).read_text(encoding="utf-8"))["steps"]
    assert list(saved) == [f"step{n}" for n in range(1, 9)]


# ------------------------------------------------------------ one source of lesson data
def test_the_worked_example_data_gives_the_lessons_numbers():
    ex = worked_example()
    assert ex.q.tolist() == [1, 0, 1, 0] and ex.d_k == 4 and ex.Q.shape == (1, 4)
    assert ex.keys.tolist() == [[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]]
    assert ex.values.tolist() == [[10, 0], [0, 5], [2, 2]]
    weights = reference.softmax(reference.scale_scores(reference.dot_scores(ex.Q, ex.keys), ex.d_k))
    assert np.allclose(weights[0], ex.lesson["weights"], atol=5e-4)
    assert np.allclose(reference.attention(ex.Q, ex.keys, ex.values)[0], ex.lesson["output"], atol=5e-3)
    ex.q[0] = 99  # each call gives fresh arrays: a caller cannot change the lesson
    assert worked_example().q[0] == 1


def test_explore_and_the_panel_read_the_same_data():
    from attn_practice.grader.teaching import explore
    from attn_practice.grader.teaching import worked_example as panel

    ex = worked_example()
    assert np.array_equal(explore.DEFAULT_EXAMPLE.keys, ex.keys)
    assert np.array_equal(panel.V, ex.values) and np.array_equal(panel.Q, ex.Q)
    assert explore.load_sentence is load_sentence


def test_explore_example_prints_the_data_files_numbers(tmp_path):
    res = run(["explore", "example"], tmp_path)
    assert res.exit_code == 0
    assert "query q = [1, 0, 1, 0]   d_k = 4" in res.stdout
    assert "output = [5.6792, 1.546]" in res.stdout


@pytest.mark.parametrize("got", [np.float64(3.0), np.ones((2, 2, 2)), np.array([np.nan, np.inf, -np.inf]),
                                 np.zeros((1, 40)), np.array([])], ids=["scalar", "3-D", "non-finite",
                                                                         "wide", "empty"])
def test_the_panel_draws_any_answer_a_learners_code_gave(got):
    rows = (Row("scores", "step1", "dot_scores(q, K)", np.array([[2.0, 0.0, 1.0]]), got, False,
                problem=f"shape {np.shape(got)}, expected (1, 3)", first_divergence=True),)
    step = StepResult(id="step1", title="Scores", status=Status.FAILED, score=0, max_score=1,
                      file="step1_scores.py", function="dot_scores")
    outcome = CheckOutcome(GradeReport("ws", (step,)), State(), resolve_step("step1"), {"step1": 3},
                           worked_example=rows)
    buf = io.StringIO()
    render_check(Console(file=buf, width=80), outcome)
    assert "first differ at scores" in joined(buf.getvalue())
