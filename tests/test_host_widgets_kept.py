"""A hosted learner's widgets reach a worker only for new code (issue 40 item 2).

The page asks for its three widgets after every save and every check. The first
request on new files computes all three in one worker job (the learner's five
sandboxes started once); the page's next two, and any repeat on unchanged code,
are answered from what the server kept, also when the page writes the example's
default fields out in full. Changed code, or a slider moved to a new value,
computes again. A real check worker pool (one process) and real sandboxes.
"""

from __future__ import annotations

import time

import pytest
from conftest import solution_source

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.host import widgets_hosted
from attn_practice.grader.host.checks import work
from attn_practice.grader.host.checks.local import LocalCheckRunner
from attn_practice.grader.teaching import explore


class CountingRunner(LocalCheckRunner):
    """The real local runner, counting the widget jobs it sends to its workers."""

    def __init__(self) -> None:
        super().__init__(work.host_options(), jobs=1)
        self.jobs: list[list[tuple]] = []

    def widgets(self, asks, files, timeout):  # type: ignore[override]
        self.jobs.append([(n, tuple(p)) for n, p in asks])
        return super().widgets(asks, files, timeout)


def written_out(a) -> str:
    """A matrix as the page's text fields hold it ('1,0;0,1')."""
    rows = a.reshape(1, -1) if a.ndim == 1 else a
    return ";".join(",".join(repr(float(x)) for x in row) for row in rows)


@pytest.fixture
def runner():
    widgets_hosted.ANSWERS = widgets_hosted.Answers()
    r = CountingRunner()
    try:
        yield r
    finally:
        r.close()
        widgets_hosted.ANSWERS = widgets_hosted.Answers()


def ask(runner: CountingRunner, name: str, params: tuple, files: dict[str, str]) -> dict:
    return widgets_hosted._computed(runner, runner.widget, name, params, files)


@pytest.mark.slow
def test_the_pages_three_widgets_cost_one_worker_job_and_unchanged_code_none(runner):
    files = {e.file: solution_source(e.id) for e in load_catalog()[:5]}
    heat = ask(runner, "heatmap", (), files)
    assert len(runner.jobs) == 1 and [n for n, _ in runner.jobs[0]] == ["heatmap", "example", "scale"]
    assert heat["stages"], heat.keys()

    # the page's next two, the example's defaults written out as its text fields hold them
    d = explore.DEFAULT_EXAMPLE
    fields = (written_out(d.q), written_out(d.keys), written_out(d.values))
    example = ask(runner, "example", fields, files)
    scale = ask(runner, "scale", (64,), files)
    assert len(runner.jobs) == 1
    assert example == ask(runner, "example", (None, None, None), files)
    assert example["stages"] and scale["stages"]

    # the same code asked again after a check: nothing computed
    assert ask(runner, "heatmap", (), files) == heat
    assert len(runner.jobs) == 1

    # a slider moved: only that widget is computed
    ask(runner, "scale", (16,), files)
    assert runner.jobs[1] == [("scale", (16,))]

    # a save: the new code is computed, all three again, and its numbers are its own
    wrong = dict(files)
    wrong["step3_softmax.py"] = solution_source("step3").replace("def softmax", "def _right") + (
        "\n\ndef softmax(x):\n    import numpy as np\n    return np.asarray(x, dtype=float)\n")
    changed = ask(runner, "heatmap", (), wrong)
    assert len(runner.jobs) == 3 and len(runner.jobs[2]) == 3
    assert changed != heat


@pytest.mark.slow
def test_a_check_after_a_widget_keeps_both_fork_servers_and_the_widget_sandboxes():
    """The kept widget sandboxes live on a fork server of their own: a check between two widget
    calls neither kills them nor makes the check engine start a new fork server (each new one
    imports NumPy again: that was most of a loaded lab's CPU)."""
    from attn_practice.grader.host.checks import widget_work

    work.init_worker(work.host_options())
    try:
        files = {e.file: solution_source(e.id) for e in load_catalog()[:5]}
        widget_work.widget_files("scale", (16,), files)
        fns = widget_work._functions[widget_work.files_hash(files)]
        kept = widget_work.sandbox_pids(fns)
        assert len(kept) == 1  # the five steps load into one sandbox
        work.check_files("step2", files)
        engine_zygote = work.engine().launcher.pid
        assert engine_zygote is not None and engine_zygote != widget_work.launcher().pid
        for step in ("step1", "step3"):
            out = work.check_files(step, files)
            assert out["report"]["steps"][0]["status"] == "passed", out["report"]
            assert work.engine().launcher.pid == engine_zygote, "the check's fork server was rebuilt"
        widget_work.widget_files("scale", (32,), files)
        assert widget_work.sandbox_pids(fns) == kept, "the widget sandboxes were started again"
    finally:
        widget_work.close()
        if work._ENGINE is not None:
            work._ENGINE.close()
            work._ENGINE = None



@pytest.mark.slow
def test_the_five_steps_share_one_widget_sandbox_and_a_step_that_kills_it_costs_only_itself():
    """New code costs one sandbox, not five. Step 2 ending its process when called takes that
    sandbox down: step 2's stage says why and the reference stands in on the learner's own
    input, and steps 3-5 are still computed by the learner's code, in sandboxes of their own."""
    from attn_practice.grader.host.checks import widget_work

    try:
        files = {e.file: solution_source(e.id, imports=False) for e in load_catalog()[:5]}
        widget_work.widget_files("heatmap", (), files)
        fns = widget_work._functions[widget_work.files_hash(files)]
        assert len(widget_work.sandbox_pids(fns)) == 1

        dying = dict(files)
        dying["step2_scale.py"] = "import os\n\n\ndef scale_scores(scores, d_k):\n    os._exit(3)\n"
        heat = widget_work.widget_files("heatmap", (), dying)
        stages = {s["stage"]: s for s in heat["stages"]}
        assert stages["scores"]["source"] == "yours" and not stages["scores"]["differs"]
        assert stages["scaled"]["source"] == "reference" and stages["scaled"]["why"]
        assert stages["weights"]["source"] == "yours" and not stages["weights"]["differs"]
        label = widgets_hosted.widgets.label(heat["stages"])
        assert "your steps 1, 3" in label["label"], label
    finally:
        widget_work.close()


def test_a_widget_asked_while_a_check_brings_it_waits_for_the_check_not_a_worker(runner):
    """The page's Save presses Check and asks for its widgets at once: a request that comes
    while the check computing the widgets is on its way waits for that check's answers."""
    import threading

    files = {e.file: solution_source(e.id) for e in load_catalog()[:5]}
    assert widgets_hosted.with_check(runner, files)  # what the check view does before queueing
    got: list[dict] = []
    asker = threading.Thread(target=lambda: got.append(ask(runner, "heatmap", (), files)))
    asker.start()
    coming = widgets_hosted.ANSWERS.coming(widgets_hosted.files_hash(files))
    deadline = time.monotonic() + 120  # a ceiling on a loaded machine, not a timing target
    while not coming._cond._waiters and time.monotonic() < deadline:  # the asker waits on it
        time.sleep(0.01)
    assert coming._cond._waiters, "the widget request did not wait for the check"
    brought = {"stages": [], "from": "the check"}  # stands for what the worker computed
    widgets_hosted.from_check(files, {"widgets": [[n, list(p), brought] for n, p in widgets_hosted.PAGE_WIDGETS]})
    asker.join(timeout=120)
    assert got == [brought] and runner.jobs == []
    assert not widgets_hosted.with_check(runner, files)  # kept now: the next check brings none


def test_a_check_that_brings_nothing_lets_the_waiting_widget_go_to_a_worker(runner):
    files = {e.file: solution_source(e.id) for e in load_catalog()[:5]}
    assert widgets_hosted.with_check(runner, files)
    widgets_hosted.from_check(files, {"report": {}})  # e.g. the grader failed: no widgets
    heat = ask(runner, "heatmap", (), files)
    assert heat["stages"] and len(runner.jobs) == 1


def test_kept_answers_give_the_servers_collector_nothing_to_walk():
    """Thousands of kept answers as nested lists were millions of objects, walked at every
    full collection while every request of the class waited: each is one text now."""
    import gc

    answers = widgets_hosted.Answers(keep=10)
    data = {"stages": [{"stage": "weights", "value": [[0.1] * 9] * 9}], "weights": [[0.5] * 9] * 9,
            "label": "Computed with your code", "first": None}
    answers.put(("k", "heatmap", ()), data)
    assert not any(gc.is_tracked(v) for v in answers._data.values())
    got = answers.get(("k", "heatmap", ()))
    assert got == data
    got["label"] = "changed by a caller"
    assert answers.get(("k", "heatmap", ()))["label"] == "Computed with your code"
