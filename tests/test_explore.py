"""`attn-practice explore` (sentence, example, scale) and the worked-example panel."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean, correct_solutions, joined, make_workspace, run
from rich.console import Console

from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.teaching import explore, explore_render
from attn_practice.grader.teaching.screens import render_worked_example
from attn_practice.grader.teaching.worked_example import first_divergence, worked_example_rows
from attn_practice.grader.teaching.workspace import Progress, Workspace

IMPL = Path(__file__).resolve().parent / "implementations"
NUMBER = re.compile(r"^(?:\d?\.\d+|1\.0|·)$")


def heatmap_rows(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The heatmap table parsed back: the header tokens and each query row's cells."""
    tokens = explore.load_sentence().tokens
    header: list[str] = []
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:3] == list(tokens[:3]) and not header:
            header = parts
        elif len(parts) == len(tokens) + 1 and all(NUMBER.match(p) for p in parts[1:]):
            rows[parts[0]] = parts[1:]
    return header, rows


def cell_value(cell: str) -> float:
    return 0.0 if cell == "·" else float(cell)


def mark_passed(ws: Path, steps) -> None:
    w = Workspace(ws)
    state = w.load_state()
    for s in steps:
        state.step(s).status = Progress.PASSED
    w.save_state(state)


# ------------------------------------------------------------------ sentence
def test_sentence_heatmap_it_looks_at_animal(tmp_path):
    res = run(["explore", "sentence"], tmp_path)
    assert res.exit_code == 0, res
    assert_clean(res)
    header, rows = heatmap_rows(res.stdout)
    assert header == list(explore.load_sentence().tokens)
    assert len(rows) == 12
    it = [cell_value(c) for c in rows["it"]]
    ranked = sorted(range(len(it)), key=lambda j: -it[j])
    assert header[ranked[0]] == "animal" and header[ranked[1]] == "street"
    assert it[ranked[0]] > 0.5 and 0.1 < it[ranked[1]] < 0.2
    assert max(it[j] for j in ranked[2:]) <= 0.05
    for cells in rows.values():  # every row is a distribution (to 2 decimals, 12 cells)
        assert abs(sum(cell_value(c) for c in cells) - 1) < 0.07
    text = joined(res.stdout)
    assert "computed with the reference (finish steps 1-5 to use yours)" in text
    assert "“it” puts most weight on “animal” (0.57), then “street” (0.13)" in text


def test_sentence_row_shows_bars(tmp_path):
    res = run(["explore", "sentence", "--row", "it"], tmp_path)
    assert res.exit_code == 0, res
    bars = {}
    for line in res.stdout.splitlines():
        m = re.match(r"^\s*(\S+)\s+(\d\.\d{3})\s+([█▏▎▍▌▋▊▉]+)\s*$", line)
        if m:
            bars[m.group(1)] = (float(m.group(2)), len(m.group(3)))
    assert len(bars) == 12
    assert max(bars, key=lambda t: bars[t][0]) == "animal"
    assert bars["animal"][1] > bars["street"][1] > bars["the"][1] >= 1  # length follows weight
    assert "Where “it” looks" in res.stdout


def test_sentence_row_by_index_and_unknown_token(tmp_path):
    assert "Where “animal” looks" in run(["explore", "sentence", "--row", "1"], tmp_path).stdout
    res = run(["explore", "sentence", "--row", "elephant"], tmp_path)
    assert res.exit_code == 2, res
    assert "no token 'elephant'" in res.stderr and "7:it" in res.stderr
    assert_clean(res)


def test_sentence_causal_masks_the_future(tmp_path):
    res = run(["explore", "sentence", "--causal"], tmp_path)
    assert res.exit_code == 0, res
    header, rows = heatmap_rows(res.stdout)
    for i, tok in enumerate(header):
        cells = rows[tok]
        assert all(c == "·" for c in cells[i + 1:]), (tok, cells)
        assert all(c != "·" for c in cells[: i + 1]), (tok, cells)
    assert rows["The"][0] == "1.0"
    assert "pass bonus step 6 to use yours" in joined(res.stdout)
    res = run(["explore", "sentence", "--causal", "--row", "it"], tmp_path)
    assert res.stdout.count("masked (a later token)") == 4


def test_sentence_uses_the_learners_code_once_steps_pass(tmp_path):
    ws = make_workspace(tmp_path)
    correct_solutions(ws)
    # Not passed yet: the reference, whatever the files hold.
    assert "computed with the reference" in run(["explore", "sentence"], ws).stdout
    mark_passed(ws, ["step1", "step2", "step3", "step4", "step5"])
    res = run(["explore", "sentence"], ws)
    assert "computed with your code" in res.stdout, res
    _, rows = heatmap_rows(res.stdout)
    assert rows["it"][1] == ".57"
    # A step 5 that "passed" but now crashes: a clear fallback, never a traceback.
    (ws / "step5_attention.py").write_text("def attention(Q, K, V):\n    raise ValueError('boom')\n")
    res = run(["explore", "sentence"], ws)
    assert res.exit_code == 0 and "your code could not be used" in joined(res.stdout), res
    assert_clean(res)


def test_learner_weights_come_from_their_functions(tmp_path):
    """A learner attention that is wrong in a known way shows in the heatmap: it is theirs."""
    ws = make_workspace(tmp_path)
    shutil.copy(IMPL / "step5" / "wrong_no_scale.py", ws / "step5_attention.py")
    mark_passed(ws, ["step1", "step2", "step3", "step4", "step5"])
    hm = explore.sentence_heatmap(workspace=Workspace(ws))
    s = explore.load_sentence()
    scores = s.queries @ s.keys.T
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    assert hm.source == "yours"
    np.testing.assert_allclose(hm.weights, e / e.sum(axis=1, keepdims=True), rtol=1e-9)


# ------------------------------------------------------------------ example
def test_example_shows_every_step_of_the_lesson(tmp_path):
    res = run(["explore", "example"], tmp_path)
    assert res.exit_code == 0, res
    text = joined(res.stdout)
    for expected in ("scores = [2, 0, 1]", "scaled = [1, 0, 0.5]",
                     "weights = [0.5065, 0.1863, 0.3072]", "output = [5.6792, 1.546]"):
        assert expected in text, expected
    assert re.search(r"k1\s+0\.5065\s+█{15,}", res.stdout), res.stdout


def test_example_any_query(tmp_path):
    res = run(["explore", "example", "--q", "0,1,0,1"], tmp_path)
    assert res.exit_code == 0, res
    assert "scores = [0, 2, 0]" in res.stdout and "weights = [0.2119, 0.5761, 0.2119]" in res.stdout
    res = run(["explore", "example", "--q", "1, 1", "--keys", "1,0;0,1", "--values", "1,2;3,4"], tmp_path)
    assert res.exit_code == 0, res
    assert "weights = [0.5, 0.5]" in res.stdout and "output = [2, 3]" in res.stdout


def test_example_from_a_file(tmp_path):
    (tmp_path / "ex.yaml").write_text("q: [2, 0]\nkeys: [[1, 0], [0, 1]]\nvalues: [[1, 0], [0, 1]]\n")
    res = run(["explore", "example", "--file", "ex.yaml"], tmp_path)
    assert res.exit_code == 0, res
    assert "scores = [2, 0]" in res.stdout and f"√2 = scores / {explore_render.num(2 ** 0.5)}" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--q", "1,0,x,0"], "--q: 'x' is not a number"),
    (["--q", "1,0,1"], "the query has 3 numbers but each key has 4"),
    (["--keys", "1,0,1,0;0,1,0"], "--keys: row 2 has 3 numbers but row 1 has 4"),
    (["--values", "1,2;3,4"], "there are 3 keys but 2 values"),
    (["--q", "1,0,1,0;0,1,0,1"], "give one query"),
    (["--q", ""], "--q is empty"),
    (["--q", "nan,0,0,0"], "not a finite number"),
    (["--file", "missing.yaml"], "cannot read missing.yaml"),
    (["--file", "bad.yaml"], "bad.yaml: keys row 2 must be a list of numbers"),
    (["--file", "list.yaml"], "expected a mapping with q, keys and values"),
])
def test_example_bad_input_is_a_usage_error(tmp_path, args, message):
    (tmp_path / "bad.yaml").write_text("keys: [[1, 0, 1, 0], 3]\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    res = run(["explore", "example", *args], tmp_path)
    assert res.exit_code == 2, res
    assert message in joined(res.stderr), res
    assert_clean(res)


# ------------------------------------------------------------------ scale
def test_scale_measures_variance_and_saturation(tmp_path):
    rows = explore.scale_experiment(seed=0)
    assert [r.d_k for r in rows] == [4, 16, 64, 256, 1024]
    for r in rows:
        assert 0.85 * r.d_k < r.variance < 1.15 * r.d_k
        assert 0.3 < r.max_weight_scaled < 0.42
    raw = [r.max_weight_raw for r in rows]
    assert raw == sorted(raw) and raw[-1] > 0.93
    assert explore.scale_experiment(seed=0) == rows  # fixed seed, same numbers

    res = run(["explore", "scale", "--seed", "0"], tmp_path)
    assert res.exit_code == 0, res
    assert "seed 0" in res.stdout and "saturates" in res.stdout
    line_1024 = [ln for ln in res.stdout.splitlines() if ln.strip().startswith("1024")]
    assert len(line_1024) == 2 and "█" in line_1024[0] and "█" in line_1024[1]
    assert f"{rows[-1].max_weight_raw:.3f}" in line_1024[1]
    other = run(["explore", "scale", "--seed", "7"], tmp_path)
    assert other.exit_code == 0 and other.stdout != res.stdout


def test_bar_drawing():
    assert explore_render.bar(1.0, 10) == "█" * 10
    assert explore_render.bar(0.0, 10) == ""
    assert explore_render.bar(0.55, 10) == "█████▌"
    assert explore_render.bar(float("nan"), 10) == ""


# ------------------------------------------------------------ worked example
@pytest.fixture(scope="module")
def launcher():
    with Launcher() as la:
        yield la


def test_worked_example_rows_for_a_correct_workspace(tmp_path, launcher):
    correct_solutions(tmp_path)
    rows = worked_example_rows(tmp_path, launcher)
    assert [r.stage for r in rows] == ["scores", "scaled", "weights", "output", "attention"]
    assert all(r.ok for r in rows), rows
    assert first_divergence(rows) is None
    np.testing.assert_allclose(rows[2].got, [[0.50648, 0.18632, 0.30720]], atol=1e-5)
    np.testing.assert_allclose(rows[4].got, [[5.67920, 1.54601]], atol=1e-5)
    console = Console(width=80, record=True, no_color=True)
    render_worked_example(console, rows)
    text = console.export_text()
    assert "[0.506, 0.186, 0.307]" in text and "reproduces the lesson's numbers" in text


def test_worked_example_no_scale_first_differs_at_scaled(tmp_path, launcher):
    correct_solutions(tmp_path)
    shutil.copy(IMPL / "step2" / "wrong_no_scale.py", tmp_path / "step2_scale.py")
    rows = worked_example_rows(tmp_path, launcher)
    assert first_divergence(rows) == "scaled"
    by = {r.stage: r for r in rows}
    assert by["scores"].ok and not by["scaled"].ok
    np.testing.assert_allclose(by["scaled"].got, [[2.0, 0.0, 1.0]])
    # Later stages are fed the learner's answers, and say the mistake came from above.
    assert by["weights"].inherited and by["output"].inherited
    assert not by["attention"].ok  # step5 imports the learner's step 2
    console = Console(width=80, record=True, no_color=True)
    render_worked_example(console, rows)
    text = joined(console.export_text())
    assert "✗ first difference" in text and "first differ at scaled (step2" in text


def test_worked_example_stub_and_missing_file_are_not_divergences(tmp_path, launcher):
    ws = make_workspace(tmp_path)
    correct_solutions(ws, ["step1"])
    (ws / "step3_softmax.py").unlink()
    rows = worked_example_rows(ws, launcher, steps=["step1", "step2", "step3"])
    assert [(r.stage, r.ok, r.pending, r.problem) for r in rows] == [
        ("scores", True, False, ""), ("scaled", False, True, "not written yet"),
        ("weights", False, True, "no step3_softmax.py")]
    assert first_divergence(rows) is None


# ------------------------------------------------------------------ speed note
def _learner(launcher, folder: Path, step: str):
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.sandbox.learner import Learner, Limits

    ex = resolve_step(step)
    return ex, Learner(launcher, folder, step_id=ex.id, module=ex.module, function=ex.function,
                       params=ex.params, limits=Limits())


@pytest.mark.parametrize(("step", "label", "slow"), [
    ("step1", "correct_triple_loop", True),
    ("step1", "correct_swapaxes_matmul", False),
    ("step4", "correct_loops", True),
    ("step4", "correct_matmul", False),
])
def test_speed_note_only_for_loops(tmp_path, launcher, step, label, slow):
    from attn_practice.grader.engine.speed import speed_note

    ex, learner = _learner(launcher, tmp_path, step)
    shutil.copy(IMPL / step / f"{label}.py", tmp_path / ex.file)
    try:
        note = speed_note(learner, ex)
    finally:
        learner.close()
    if slow:
        assert note is not None and "slower than the reference" in note and "(8, 64, " in note
    else:
        assert note is None
