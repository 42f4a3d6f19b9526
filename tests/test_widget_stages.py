"""The widgets' stage-by-stage computation and the label built from it (in process, no server).

`compute` here is a plain function standing for the learner's code (the
sandboxed one is exercised over HTTP and in browsers); the reference chain,
the fall-backs on the learner's own input, the first departure and every
wording of the label are checked against numbers worked out here.
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_practice.grader.teaching.web import widgets
from attn_practice.reference import attention as reference

Q = np.array([1.0, 0, 1, 0])
K = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]])
V = np.array([[10.0, 0], [0, 5], [2, 2]])


def learner(**broken):
    """The learner's code: the reference, except the steps given (a function, or an exception)."""
    def compute(step_id, *args):
        how = broken.get(step_id)
        if how is None:
            fn = reference.FUNCTIONS[{"step1": "dot_scores", "step2": "scale_scores", "step3": "softmax",
                                      "step4": "weighted_sum", "step5": "attention"}[step_id]]
            return np.asarray(fn(*args), dtype=float), ""
        if isinstance(how, str):
            return None, how
        return np.asarray(how(*args), dtype=float), ""
    return compute


def test_all_yours_and_right():
    d = widgets.example(learner(), Q, K, V)
    lab = widgets.label(d["stages"])
    assert lab["source"] == "yours" and lab["label"] == "Computed with your code: your steps 1, 2, 3, 4, 5."
    assert lab["first"] is None and [round(x, 2) for x in d["output"]] == [5.68, 1.55]


def test_a_wrong_step_is_yours_with_the_reference_beside_it_from_the_first_departure():
    d = widgets.example(learner(step3=lambda x: x / x.sum(axis=-1, keepdims=True)), Q, K, V)
    lab = widgets.label(d["stages"])
    assert lab["source"] == "yours" and lab["first"] == "weights"
    st = {s["stage"]: s for s in lab["stages"]}
    assert np.allclose(st["weights"]["value"][0], [2 / 3, 0, 1 / 3], atol=1e-4)
    assert np.allclose(st["weights"]["reference"][0], [0.5065, 0.1863, 0.3072], atol=1e-3)
    assert st["weights"]["first"] and not st["scores"]["differs"]
    assert st["output"]["differs"] and st["output"]["inherited"]  # right, on the wrong weights
    assert not st["attention"]["differs"]  # the learner's step 5 does not use this step 3


def test_a_raising_step_is_replaced_on_the_learners_own_input_and_the_label_says_why():
    d = widgets.example(learner(step1=lambda q, k: 2 * (q @ k.T),
                                step3="your step 3 raises on this input (ValueError: no)"), Q, K, V)
    lab = widgets.label(d["stages"], stale=["step3"])
    assert lab["source"] == "mixed" and lab["yours"] == [1, 2, 4, 5] and lab["reference"] == [3]
    assert ("Computed with your code where it can: your steps 1, 2, 4, 5; the reference softmax "
            "(step 3), because your step 3 raises on this input (ValueError: no).") in lab["label"]
    assert "Your step 3 changed since the last check" in lab["label"]
    st = {s["stage"]: s for s in lab["stages"]}
    # the reference softmax was fed the learner's (doubled) scaled scores, not the lesson's
    doubled = 2 * (Q[None] @ K.T) / 2
    assert np.allclose(st["weights"]["value"][0], reference.softmax(doubled)[0], atol=1e-4)
    assert lab["first"] == "scores"


def test_unwritten_steps_are_named_together_and_a_wrong_shape_is_not_used():
    d = widgets.example(learner(step2="your step 2 is not written yet", step4="your step 4 is not written yet",
                                step5="your step 5 is not written yet",
                                step1=lambda q, k: k @ q.T), Q, K, V)
    lab = widgets.label(d["stages"])
    assert ("the reference scale_scores, weighted_sum, attention (steps 2, 4, 5), because your ones "
            "are not written yet") in lab["label"]
    assert "the reference dot_scores (step 1), because your dot_scores returns shape (3, 1)" in lab["label"]
    assert lab["yours"] == [3]


def test_a_step_used_twice_that_answers_once_is_named_for_the_call_it_missed():
    def flaky_softmax(x):
        if x.std() > 3:
            raise OverflowError
        return reference.softmax(x)

    def compute(step_id, *args):
        if step_id == "step3":
            try:
                return np.asarray(flaky_softmax(*args)), ""
            except OverflowError:
                return None, "your step 3 raises on this input (OverflowError)"
        return learner()(step_id, *args)

    lab = widgets.label(widgets.scale(compute, 1024)["stages"])
    assert lab["source"] == "mixed" and 3 in lab["yours"] and 3 in lab["reference"]
    assert "the reference softmax (step 3) for softmax(scores), because your step 3 raises" in lab["label"]


@pytest.mark.slow
def test_a_widget_sandbox_is_replaced_after_many_calls(tmp_path, monkeypatch):
    """Its CPU-time limit is per process: a fresh sandbox after RECYCLE_AFTER calls."""
    from conftest import correct_solutions, run

    from attn_practice.grader.catalog import resolve_step

    assert run(["start", "ws"], tmp_path).exit_code == 0
    correct_solutions(tmp_path / "ws", ["step1"])
    monkeypatch.setattr(widgets, "RECYCLE_AFTER", 2)
    fns = widgets.LearnerFunctions(tmp_path / "ws")
    try:
        ex = resolve_step("step1")
        seen = []
        for _ in range(4):
            got, why = fns(ex, "v1", Q[None], K)
            assert why == "" and np.allclose(got, Q[None] @ K.T)
            seen.append(id(fns._learners[ex.id][1]))
        assert len(set(seen)) == 2
    finally:
        fns.close()


def test_the_older_label_form_still_answers_for_reference_only_callers():
    """The reference-only path (a runner without widgets, such as Dask): label(False, problems) and by_reference(ex)."""
    from attn_practice.grader.catalog import resolve_step

    def compute(step_id, *args):
        return widgets.by_reference(resolve_step(step_id), *args)

    out = widgets.heatmap(compute, ["a", "b"], np.eye(2), np.eye(2))
    said = widgets.label(False, out.pop("problems"))
    assert said == {"source": "reference", "label": "computed with the reference"}
    import json

    json.dumps(out)  # plain data throughout
