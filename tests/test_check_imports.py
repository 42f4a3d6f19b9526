"""`check` blames the imported step that is wrong, on the first check (20.4).

A step 5 that imports a broken step 3: the first `check step5` runs step 3's
suites too (its file was never checked, or changed since) and says "your
step 5 calls your `softmax` (step 3), which fails: fix step3_softmax.py
first", with `--reference-steps` as the way to try step 5 alone. An
imported step whose file has not changed since its check is not graded
again (the state file is the cache, keyed by the file's content).
"""

from __future__ import annotations

import pytest
import yaml
from conftest import correct_solutions, run, run_script, write_step

pytestmark = pytest.mark.slow

NO_MAX = """\
    import numpy as np


    def softmax(x, axis=-1):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)
"""
WRONG_AXIS = """\
    import numpy as np


    def softmax(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
"""


def _state(ws):
    return yaml.safe_load((ws / "attn-practice.yaml").read_text())["steps"]


@pytest.mark.parametrize("broken", [NO_MAX, WRONG_AXIS], ids=["unstable", "wrong-axis"])
def test_first_check_of_step5_names_the_broken_step3(tmp_path, broken):
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    write_step(ws, "step3", broken)
    res = run(["check", "step5"], ws)
    assert res.exit_code == 1, res
    flat = " ".join(res.output.split())
    assert ("your step 5 calls your `softmax` (step 3), which fails: fix step3_softmax.py first"
            in flat.lower()), res
    assert "--reference-steps" in flat
    assert "Fix the first problem above in step5_attention.py" not in flat
    steps = _state(ws)
    assert steps["step3"]["status"] == "failed" and steps["step3"]["attempts"] == 0  # graded, not an attempt
    # the learner's way to try step 5 alone
    alone = run(["check", "step5", "--reference-steps"], ws)
    assert alone.exit_code == 0, alone


def test_an_unchanged_imported_step_is_not_graded_again(tmp_path):
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    assert run(["check", "step3"], ws).exit_code == 0
    checked = _state(ws)["step3"]["checked"]
    # a verdict the cache must keep: a re-grade of step 3 would turn it back into "passed"
    data = yaml.safe_load((ws / "attn-practice.yaml").read_text())
    data["steps"]["step3"]["status"] = "failed"
    (ws / "attn-practice.yaml").write_text(yaml.safe_dump(data))
    run(["check", "step5"], ws)
    steps = _state(ws)
    assert steps["step3"]["checked"] == checked and steps["step3"]["status"] == "failed"
    # steps 1, 2 and 4, never checked, were graded for step 5 (and pass), without an attempt
    assert all(steps[s]["status"] == "passed" and steps[s]["attempts"] == 0
               for s in ("step1", "step2", "step4"))


def test_the_console_script_says_it_too(tmp_path):
    """The console script, as learners meet it, prints the same words."""
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    write_step(ws, "step3", NO_MAX)
    res = run_script(["check", "step5"], ws)
    assert res.exit_code == 1
    assert "which fails: fix step3_softmax.py first" in " ".join(res.output.split())


def test_the_page_blames_the_broken_imported_step_on_its_first_check(tmp_path):
    from serve_helpers import Served

    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    write_step(ws, "step3", NO_MAX)
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        status, result = s.post_json("/api/step/step5/check", {})
        assert status == 200 and not result["passed"]
        flat = " ".join(result["html"].split())
        assert ("Your step 5 calls your <code>softmax</code> (step 3), which fails: "
                '<a href="/step/step3">fix step3_softmax.py first</a>') in flat, flat
        assert "--reference-steps" in flat
    finally:
        s.stop()


def test_status_says_when_a_checked_file_changed_since(tmp_path):
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws, ["step1"])
    assert run(["check", "step1"], ws).exit_code == 0
    assert "changed since" not in run(["status"], ws).output
    path = ws / "step1_scores.py"
    path.write_text(path.read_text() + "\n# edited after the pass\n")
    out = " ".join(run(["status"], ws).output.split())
    assert "passed, changed since" in out and "step1_scores.py changed since its last check" in out


def test_explore_does_not_call_a_changed_file_yours(tmp_path):
    """`explore sentence` uses the learner's code once steps 1-5 pass: not once a file changed since."""
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    assert run(["check", "--all"], ws).exit_code in (0, 1)
    assert "computed with your code" in run(["explore", "sentence"], ws).stdout
    write_step(ws, "step3", NO_MAX)
    out = " ".join(run(["explore", "sentence"], ws).stdout.split())
    assert "computed with the reference (your step3 changed since its last check" in out, out
