"""`attn-practice host`'s three widgets on each learner's own code, computed in the check workers.

The hosted page's widgets answer as `serve`'s do: every stage by the learner's
own functions (in sandboxes started by a check worker, never the server),
the reference beside a stage that departs, and a label built from the
stages that names whose functions made the numbers and why.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_host_support import hosted_class, implementation

from attn_practice.grader.teaching import explore
from attn_practice.reference import attention as reference

pytestmark = pytest.mark.slow

CORRECT = {"step1": "correct_einsum", "step2": "correct_np_sqrt", "step4": "correct_einsum",
           "step5": "correct_einsum"}


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    with hosted_class(tmp_path_factory.mktemp("class")) as h:
        yield h


def learner_with_step3(hosted, name: str, step3: str):
    b = hosted.browser().join(name)
    for step, impl in CORRECT.items():
        assert b.save(step, implementation(step, impl)).status_code == 200
    assert b.save("step3", step3).status_code == 200
    return b


def widget_jobs(hosted, monkeypatch) -> list[str]:
    """The names of the widget jobs that reach the workers from now on ("widget", "widgets")."""
    runner = hosted.ctx.runner
    jobs: list[str] = []
    for name in ("widget", "widgets"):
        real = getattr(runner, name)
        monkeypatch.setattr(runner, name, lambda *a, _real=real, _name=name, **k: (jobs.append(_name), _real(*a, **k))[1])
    return jobs


def stage(out, name):
    return next(s for s in out["stages"] if s["stage"] == name)


def test_a_wrong_softmax_shows_the_learners_own_numbers_and_the_first_departing_stage(hosted):
    b = learner_with_step3(hosted, "WrongAxis", implementation("step3", "wrong_softmax_wrong_axis"))
    heat = b.client.get("/api/widget/heatmap").json()
    s = explore.load_sentence()
    ref = reference.softmax(reference.scale_scores(reference.dot_scores(s.queries, s.keys),
                                                   s.queries.shape[-1]))
    weights = stage(heat, "weights")
    assert weights["source"] == "yours" and weights["differs"] and weights["first"]
    # the learner's numbers (the heatmap's output is the weight matrix), the reference's beside
    assert not np.allclose(heat["weights"], ref, atol=1e-3)
    assert np.allclose(heat["reference_weights"], ref, atol=1e-3)
    assert not stage(heat, "scores")["differs"] and not stage(heat, "scores")["first"]
    assert heat["source"] == "yours" and heat["first"] == "weights"
    assert heat["label"].startswith("Computed with your code: your steps 1, 2, 3, 4, 5.")
    assert "first stage that departs from the reference: weights (step 3)" in heat["label"]
    assert heat["sentence"] == s.text
    ex = b.client.get("/api/widget/example", params={"q": "1,0,1,0"}).json()
    assert ex["first"] == "weights" and ex["source"] == "yours"
    sc = b.client.get("/api/widget/scale", params={"d_k": "16"}).json()
    assert sc["d_k"] == 16 and sc["reference_numbers"] is not None and 3 in sc["yours"]


def test_a_softmax_that_raises_is_replaced_by_the_reference_and_the_label_says_why(hosted):
    b = learner_with_step3(hosted, "Raises", "def softmax(x, axis=-1):\n    raise ValueError('no')\n")
    heat = b.client.get("/api/widget/heatmap").json()
    weights = stage(heat, "weights")
    assert weights["source"] == "reference" and "raises" in weights["why"]
    assert heat["source"] == "mixed" and heat["reference"] == [3]
    assert "the reference softmax (step 3), because your step 3 raises on this input" in heat["label"]
    assert "your steps 1, 2, 4, 5" in heat["label"]


def test_an_untouched_workspace_says_the_reference_computed_it(hosted):
    b = hosted.browser().join("Stub")
    heat = b.client.get("/api/widget/heatmap").json()
    assert heat["source"] == "reference" and heat["yours"] == []
    assert heat["label"].startswith("Computed with the reference:")
    assert "not written yet" in heat["label"]


def test_an_infinite_loop_costs_only_that_learners_widget_call(hosted):
    b = learner_with_step3(hosted, "Loops", "def softmax(x, axis=-1):\n    while True:\n        pass\n")
    heat = b.client.get("/api/widget/heatmap").json()
    weights = stage(heat, "weights")
    assert weights["source"] == "reference" and "timed out" in weights["why"]
    other = learner_with_step3(hosted, "Next", implementation("step3", "correct_max_shift"))
    out = other.client.get("/api/widget/heatmap").json()
    assert out["source"] == "yours" and out["first"] is None
    r = other.check("step1")  # checks still run in the same workers
    assert r.status_code == 200 and r.json()["passed"], r.text


def test_the_stale_steps_are_named(hosted):
    b = learner_with_step3(hosted, "Stale", implementation("step3", "correct_max_shift"))
    assert b.check("step1").json()["passed"]
    assert b.save("step1", implementation("step1", "correct_triple_loop")).status_code == 200
    heat = b.client.get("/api/widget/heatmap").json()
    assert heat["stale"] == ["step1"] and "changed since the last check" in heat["label"]


def test_a_runner_without_widgets_gives_the_reference_and_says_why(hosted):
    """The Dask runner computes no widgets: the reference's numbers, labelled as such."""
    from attn_practice.grader.host import widgets_hosted

    b = hosted.browser().join("OnDask")
    learner = next(x for x in hosted.ctx.store.learners() if x.display_name == "OnDask")
    out = widgets_hosted.answer(hosted.ctx.lesson, object(), learner, "scale", {"d_k": "8"})
    assert out["source"] == "reference" and "Dask" in out["label"] and out["d_k"] == 8
    assert b.client.get("/api/widget/scale", params={"d_k": "8"}).json()["source"] == "reference"


def test_a_looping_widget_call_in_flight_does_not_stop_another_learners_check(hosted):
    import threading

    looping = learner_with_step3(hosted, "LoopsAgain",
                                 "def softmax(x, axis=-1):\n    while 1:\n        x = x + 0\n")
    checker = learner_with_step3(hosted, "Checker", implementation("step3", "correct_max_shift"))
    got: dict[str, object] = {}
    t = threading.Thread(target=lambda: got.update(
        heat=looping.client.get("/api/widget/heatmap").json()))
    t.start()
    r = checker.check("step3")
    t.join()
    assert r.status_code == 200 and r.json()["passed"], r.text
    assert got["heat"]["reference"] == [3] and "timed out" in got["heat"]["label"]


def test_a_widget_kept_waiting_by_the_class_s_checks_blames_the_busy_workers_not_the_code(hosted):
    """Every worker busy for the whole wait: the reference's numbers, and a label that says the
    workers were busy (the learner's code never ran, so it must not be said to be slow)."""
    from attn_practice.grader.host import widgets_hosted

    b = learner_with_step3(hosted, "Busy", "# waiting\n" + implementation("step3", "correct_max_shift"))
    pool = hosted.ctx.runner._pool
    sleepers = [pool.submit(time.sleep, 3) for _ in range(3)]  # the one worker, its call queue, one more
    kept, widgets_hosted.WIDGET_TIMEOUT = widgets_hosted.WIDGET_TIMEOUT, 1.0
    try:
        heat = b.client.get("/api/widget/heatmap").json()
    finally:
        widgets_hosted.WIDGET_TIMEOUT = kept
        for s in sleepers:
            s.result(timeout=120)
    assert heat["source"] == "reference"
    assert "busy with the class's checks" in heat["label"] and "took longer" not in heat["label"]
    s = explore.load_sentence()
    assert heat["sentence"] == s.text and np.allclose(heat["weights"], reference.softmax(
        reference.scale_scores(reference.dot_scores(s.queries, s.keys), s.queries.shape[-1])), atol=1e-3)


def test_a_check_brings_the_pages_widgets_and_the_page_then_asks_no_worker(hosted, monkeypatch):
    """The page asks for its three widgets as soon as a report shows: the check computes them
    beside its worked example (one sandbox for both), so those requests reach no worker and
    the numbers are the learner's own, exactly as a widget job would have computed them."""
    jobs = widget_jobs(hosted, monkeypatch)
    b = learner_with_step3(hosted, "Brought", "# brought with the check\n"
                           + implementation("step3", "wrong_softmax_wrong_axis"))
    r = b.check("step3")
    assert r.status_code == 200 and r.json()["status"] == "failed"
    assert "weights" in r.json()["html"]  # the worked example still comes with the report
    heat = b.client.get("/api/widget/heatmap").json()
    ex = b.client.get("/api/widget/example").json()
    sc = b.client.get("/api/widget/scale", params={"d_k": "64"}).json()
    assert jobs == [], jobs
    assert heat["first"] == "weights" and heat["source"] == "yours" and stage(heat, "weights")["differs"]
    assert ex["first"] == "weights" and sc["d_k"] == 64 and sc["reference_numbers"] is not None
    # a slider moved: that one is computed in a worker, as before
    b.client.get("/api/widget/scale", params={"d_k": "16"})
    assert jobs == ["widgets"]


def test_a_passing_check_answers_without_the_widgets_and_the_page_gets_them_in_one_job(hosted, monkeypatch):
    """A passing check has no worked example, so no sandbox of the learner's five steps: it
    answers without computing the widgets (they were half its time), and the page's three
    requests for them then cost one widget job, with the learner's own numbers."""
    jobs = widget_jobs(hosted, monkeypatch)
    b = learner_with_step3(hosted, "Passing", "# passes, no widgets with it\n"
                           + implementation("step3", "correct_float64_upcast"))
    r = b.check("step3")
    assert r.status_code == 200 and r.json()["status"] == "passed", r.json()
    assert jobs == []
    heat = b.client.get("/api/widget/heatmap").json()
    ex = b.client.get("/api/widget/example").json()
    sc = b.client.get("/api/widget/scale", params={"d_k": "64"}).json()
    assert jobs == ["widgets"], jobs  # the three in one job, not one each and not none
    assert heat["source"] == ex["source"] == sc["source"] == "yours" and sc["d_k"] == 64
