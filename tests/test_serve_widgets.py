"""The widgets run the learner's own code, and their labels say whose code made each number (20.1).

Over HTTP against the console script: a step broken on disk while `serve`
was stopped is re-checked when it starts (never shown as passed) and its
wrong numbers are shown as the learner's, beside the reference's, from the
first stage that departs; a step broken in the page (raises) is replaced by
the reference on the learner's own input, and the label says so and why; a
file changed since its check is *stale* in the summary and in the label; the
last report is kept and comes back (stale once the file changes).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import yaml
from conftest import correct_solutions, run
from serve_helpers import Served, wait_until

pytestmark = pytest.mark.slow

NO_EXP = textwrap.dedent("""\
    import numpy as np


    def softmax(x, axis=-1):
        x = np.asarray(x, dtype=float)
        return x / x.sum(axis=axis, keepdims=True)
""")
RAISES = textwrap.dedent("""\
    import numpy as np


    def softmax(x, axis=-1):
        raise ZeroDivisionError("my softmax is broken")
""")
Q = np.array([[1.0, 0, 1, 0]])
K = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]])
V = np.array([[10.0, 0], [0, 5], [2, 2]])


def _no_exp_numbers() -> tuple[list[float], list[float]]:
    """What the broken softmax makes of the worked example, worked out here by hand."""
    scaled = (Q @ K.T) / 2
    w = scaled / scaled.sum(axis=-1, keepdims=True)
    return w[0].tolist(), (w @ V)[0].tolist()


def _stage(d: dict, name: str) -> dict:
    return next(s for s in d["stages"] if s["stage"] == name)


def _summary_step(s: Served, step: str) -> dict:
    return next(x for x in s.get_json("/api/summary")[1]["steps"] if x["id"] == step)


@pytest.fixture
def passed_ws(tmp_path):
    """Steps 1-5 written and checked (all pass), with serve not running."""
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    assert run(["check", "--all"], ws).exit_code in (0, 1)
    state = yaml.safe_load((ws / "attn-practice.yaml").read_text())
    assert all(state["steps"][f"step{i}"]["status"] == "passed" for i in range(1, 6))
    return ws


def test_a_step_broken_on_disk_while_stopped_is_rechecked_and_shown_as_yours(passed_ws, tmp_path):
    (passed_ws / "step3_softmax.py").write_text(NO_EXP)
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        # never ✓ for a file that changed since its pass: stale at once, then re-checked (failed)
        first = _summary_step(s, "step3")
        assert first["stale"] or first["status"] == "failed"
        assert wait_until(lambda: _summary_step(s, "step3")["status"] == "failed", timeout=180)
        assert not _summary_step(s, "step3")["stale"]
        d = s.get_json("/api/widget/example?q=1,0,1,0")[1]
        weights, output = _no_exp_numbers()
        assert np.allclose(d["weights"], weights) and np.allclose(d["output"], output)
        assert [round(x, 3) for x in d["output"]] == [7.333, 0.667]
        # the label says whose: every stage ran the learner's code, and step 3 departs first
        assert d["source"] == "yours" and d["yours"] == [1, 2, 3, 4, 5] and d["reference"] == []
        assert "your code" in d["label"] and "steps 1, 2, 3, 4, 5" in d["label"]
        assert d["first"] == "weights" and "weights (step 3)" in d["label"]
        w = _stage(d, "weights")
        assert w["source"] == "yours" and w["differs"] and w["first"]
        assert np.allclose(w["reference"][0], [0.506, 0.186, 0.307], atol=1e-3)  # beside it
        assert _stage(d, "output")["inherited"] and not _stage(d, "scores")["differs"]
        h = s.get_json("/api/widget/heatmap")[1]
        assert h["source"] == "yours" and h["first"] == "weights" and h["reference_weights"]
    finally:
        s.stop()


def test_a_step_broken_in_the_page_is_replaced_by_the_reference_and_the_label_says_why(passed_ws, tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        assert s.get_json("/api/widget/example")[1]["source"] == "yours"
        page = s.get_json("/api/step/step3")[1]
        status, _ = s.post_json("/api/step/step3/save", {"content": RAISES, "base": page["version"]})
        assert status == 200
        # saved, not checked yet: stale in the summary and in the label, right after the save
        assert _summary_step(s, "step3")["stale"]
        d = s.get_json("/api/widget/example?q=1,0,1,0")[1]
        assert d["source"] == "mixed" and d["yours"] == [1, 2, 4] and d["reference"] == [3, 5]
        assert ("the reference softmax (step 3), because your step 3 raises on this input"
                in d["label"]), d["label"]
        assert "my softmax is broken" in _stage(d, "weights")["why"]
        assert "changed since the last check" in d["label"]
        # the reference softmax on the learner's (right) scaled scores: the lesson's numbers
        assert [round(x, 2) for x in d["output"]] == [5.68, 1.55] and d["first"] is None
        sc = s.get_json("/api/widget/scale?d_k=64")[1]
        assert 3 in sc["reference"] and "because your step 3 raises" in sc["label"]
        # once checked, no longer stale; the label still names the reference softmax
        s.post_json("/api/step/step3/check", {})
        assert not _summary_step(s, "step3")["stale"]
        d = s.get_json("/api/widget/example?q=1,0,1,0")[1]
        assert "changed since" not in d["label"] and "the reference softmax" in d["label"]
    finally:
        s.stop()


def test_the_last_report_is_kept_and_marked_stale_when_the_file_changes(passed_ws, tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        assert s.get_json("/api/step/step2")[1]["last_report"] is None  # checked in the terminal only
        status, result = s.post_json("/api/step/step2/check", {})
        assert status == 200 and result["passed"]
        kept = s.get_json("/api/step/step2")[1]["last_report"]
        assert kept["html"] == result["html"] and kept["status"] == "passed" and not kept["stale"]
    finally:
        s.stop()
    # a restart (a reload of the page) still has it; a change to the file marks it stale
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        assert s.get_json("/api/step/step2")[1]["last_report"]["html"] == result["html"]
        path = passed_ws / "step2_scale.py"
        path.write_text(path.read_text() + "\n# changed\n")
        kept = s.get_json("/api/step/step2")[1]["last_report"]
        assert kept["stale"] and kept["version"] == result["version"]
        page = s.get_json("/api/step/step2")[1]
        assert page["stale"]
    finally:
        s.stop()
