"""The hosted page's widgets tell the truth, in a real headless Chromium (issues 20 and 23).

A learner joins a hosted class and works only in the browser. The three
widgets are computed in the check workers on the learner's own latest saved
code: with nothing written they say the reference computed them, and why;
a step 3 that raises is replaced by the reference softmax and the label says
so. (Which of steps 1 and 2 answered within the hosted widget's 1 s limit
depends on the machine's load, so only step 3's part of the label is read.)
"""

from __future__ import annotations

import pytest
from browser import browser
from test_host_browser import by_id, join, set_editor
from test_host_support import HostProcess, implementation
from test_serve_truth_browser import RAISES, stage_source

pytestmark = pytest.mark.slow


def check_and_wait(b, words: str) -> None:
    """Click Check and wait for the report of this check (the page counts the reports it draws)."""
    import time

    for _ in range(5):  # "You are checking very often: wait 1 s": a learner would wait and click again
        before = int(b.execute_script("return document.body.dataset.reports || '0'"))
        by_id(b, "check").click()
        try:
            b.wait_for(lambda d, n=before: "checking very often" in by_id(d, "report-body").text or (
                int(d.execute_script("return document.body.dataset.reports || '0'")) > n
                and words in by_id(d, "report-body").text), timeout=180)
        except Exception as exc:  # say what the page showed instead
            raise AssertionError(f"no report saying {words!r}; the page shows: "
                                 f"{by_id(b, 'report-body').text[:600]!r}") from exc
        if "checking very often" not in by_id(b, "report-body").text:
            return
        time.sleep(2)
    raise AssertionError("the class's rate limit never let the check through")


def test_a_hosted_learners_widgets_say_whose_code_made_their_numbers(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        with browser(1280, 900) as b:
            join(b, h, "Ann")
            # nothing written yet: the reference computed every number, and the label says why
            b.get(f"{h.base}/step/step3")
            b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true")
            b.wait_for(lambda d: "not written yet" in by_id(d, "example-source").text, timeout=60,
                       message="the label did not say the steps are not written")
            assert "your step" not in by_id(b, "example-source").text
            # steps 1 and 2 written and passed, step 3 raises: the reference softmax stands in, and says why
            for step, name in (("step1", "correct_einsum"), ("step2", "correct_np_sqrt")):
                b.get(f"{h.base}/step/{step}")
                b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true")
                set_editor(b, implementation(step, name))
                check_and_wait(b, "passed")
            b.get(f"{h.base}/step/step3")
            b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true")
            set_editor(b, RAISES)
            check_and_wait(b, "failed")
            why = "the reference softmax (step 3), because your step 3 raises on this input"
            for widget in ("example", "heatmap"):
                b.wait_for(lambda d, w=widget: why in by_id(d, f"{w}-source").text, timeout=60,
                           message=f"the hosted {widget} label did not say why the reference stood in")
            b.wait_for(lambda d: stage_source(d, "weights") == "reference", timeout=30)
            assert not [e for e in b.console_errors() if "favicon" not in e and "Failed to load" not in e]
    finally:
        h.stop()
