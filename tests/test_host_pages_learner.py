"""A hosted learner's page in real headless Chromium (issue 37, items 2, 6 and 8).

- words for a learner in a browser: no terminal command, folder or `serve`
  anywhere a hosted learner reads (report, stub, reset, conflict, a lost
  connection), while `serve`'s report keeps its own words;
- a save typed while the server is down stays in the page and arrives once
  it is back ("Saved." only then, no stale "not answering" left); a text
  kept in the browser's storage comes back after a reload and is saved;
- checking too often keeps the last report on screen and checks again by
  itself after the wait;
- "Earlier versions" shows each version's check result and what changed;
- axe-core finds nothing critical or serious on the join page and the
  learner's page; the favicon is served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from axe import axe_violations
from browser import browser
from test_host_browser import by_id, join, set_editor
from test_host_support import HostProcess, implementation

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.teaching.web import render

pytestmark = pytest.mark.slow

WRONG = implementation("step1", "wrong_elementwise_product")
RIGHT = implementation("step1", "correct_einsum")
#: what a hosted learner must never be told (they have a browser only)
TERMINAL_WORDS = ("run Python in the folder", "here or in your own editor", "attn-practice show",
                  "backups/", "attn-practice serve", "attn-practice check", "in a terminal")


def ready(b) -> None:
    b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
               message="the lesson page never became ready")


@contextmanager
def ann_on_step1(tmp_path) -> Iterator[tuple[dict[str, Any], Any]]:
    """A class with Ann joined in a fresh Chromium, on step 1: ({"host": HostProcess}, browser).
    A test that restarts the class puts the new process in the dict; it is stopped at the end."""
    run = {"host": HostProcess(tmp_path / "class")}
    try:
        with browser(1280, 900) as b:
            join(b, run["host"], "Ann")
            b.get(f"{run['host'].base}/step/step1")
            ready(b)
            yield run, b
    finally:
        run["host"].stop()


def reports_drawn(b) -> int:
    return int(b.execute_script("return document.body.dataset.reports || '0'"))


def stored(b, step: str = "step1") -> str:
    """The step's latest stored text, as the server has it (asked from the page's own session)."""
    return b.execute_script(f"return fetch('/api/step/{step}').then((r) => r.json()).then((d) => d.content)")


def page_words(b) -> str:
    return b.execute_script("return document.body.innerText + '\\n' + document.getElementById('code').value")


def test_hosted_words_fit_a_browser(tmp_path):
    with ann_on_step1(tmp_path) as (run, b):
        assert "The lesson and your task are on this page" in by_id(b, "code").get_attribute("value")
        set_editor(b, WRONG)
        by_id(b, "check").click()
        b.wait_for(lambda d: "elementwise-product" in by_id(d, "report-body").text, timeout=180)
        words = page_words(b)
        assert "Reproduce it in a Python notebook" in words, words
        assert "in the editor on this page" in words
        by_id(b, "reset").click()
        assert "Earlier versions" in by_id(b, "reset-q").text
        by_id(b, "reset-no").click()
        said = [w for w in TERMINAL_WORDS if w in page_words(b)]
        assert not said, said
        # the server goes away: the page names the class server, not a command
        run["host"].stop()
        b.wait_for(lambda d: by_id(d, "notice").is_displayed(), timeout=60)
        assert "class server" in by_id(b, "notice").text
        said = [w for w in TERMINAL_WORDS if w in page_words(b)]
        assert not said, said


def test_serve_keeps_its_own_words():
    """The same failure, rendered for `serve` and for a hosted class."""
    from attn_practice.grader.results import Failure, Status, StepResult, TestResult

    ex = next(e for e in load_catalog() if e.id == "step1")
    failure = Failure(kind="value", summary="wrong values", repro="dot_scores(np.ones((2, 3)), np.ones((2, 3)))")
    step = StepResult(id="step1", title=ex.title, file=ex.file, function=ex.function, status=Status.FAILED,
                      score=0.0, max_score=1.0,
                      tests=(TestResult(name="test_values", status=Status.FAILED, failure=failure),))
    serve = render.step_html(step) + render.next_html(step, hints_used=0, hints_total=2, next_step=None)
    hosted = (render.step_html(step, audience=render.Audience.HOSTED)
              + render.next_html(step, hints_used=0, hints_total=2, next_step=None,
                                 audience=render.Audience.HOSTED))
    assert "run Python in the folder that holds step1_scores.py" in serve
    assert "here or in your own editor" in serve
    assert "from step1_scores import dot_scores" in serve
    assert not [w for w in TERMINAL_WORDS if w in hosted]
    assert "from step1_scores import" not in hosted  # no folder to import from
    assert "dot_scores(np.ones((2, 3)), np.ones((2, 3)))" in hosted and "import numpy as np" in hosted


def test_the_engines_terminal_advice_becomes_the_pages():
    """Hints and notes written for the terminal (`attn-practice hint`, --reference-steps, `attn-practice
    check stepN`, `attn-practice solution stepN`) reach a hosted learner as the page's own means."""
    from attn_practice.grader.engine.engine import dependency_note
    from attn_practice.grader.results import Failure, Status, StepResult, TestResult

    catalog = {e.id: e for e in load_catalog()}
    hints = [Failure(kind="not-implemented", summary="s", hint="Open the file, replace the line with your "
                     "code, and check again. `attn-practice hint` helps you start."),
             Failure(kind="not-implemented", summary="s", hint="Write softmax in step3_softmax.py first, or "
                     "check this step with --reference-steps to use the reference versions of earlier steps.")]
    step = StepResult(id="step5", title="attention", file="step5_attention.py", function="attention",
                      status=Status.FAILED, score=0.0, max_score=1.0,
                      tests=tuple(TestResult(name=f"t{i}", status=Status.FAILED, failure=f)
                                  for i, f in enumerate(hints)),
                      notes=(dependency_note(StepResult(id="step5", title="", status=Status.FAILED, score=0,
                                                        max_score=1, function="attention"), catalog["step3"]),))
    html = render.step_html(step, verbose=True, audience=render.Audience.HOSTED)
    assert "attn-practice" not in html and "--reference-steps" not in html, html
    assert "Reveal a hint" in html
    assert "`attn-practice hint`" in render.step_html(step, verbose=True)  # serve keeps its words
    text = render.for_reader("try it vectorised. `attn-practice solution step4` shows one way.",
                             render.Audience.HOSTED)
    assert text == ("try it vectorised. The reference solution (shown on this page once step4 passes) "
                    "shows one way.")


def test_a_save_while_the_server_is_down_arrives_after(tmp_path):
    with ann_on_step1(tmp_path) as (run, b):
        run["host"].stop()
        b.wait_for(lambda d: d.execute_script("return document.body.dataset.connected") == "false",
                   timeout=60)
        typed = WRONG + "\n# typed while the server was down\n"
        set_editor(b, typed)
        by_id(b, "save").click()
        b.wait_for(lambda d: "Not saved yet" in by_id(d, "save-status").text, timeout=60)
        assert "class server" in by_id(b, "save-status").text
        kept = b.execute_script("return localStorage.getItem(unsentKey('step1'))")
        assert kept and json.loads(kept)["content"] == typed
        run["host"] = HostProcess(tmp_path / "class", port=run["host"].port)
        b.wait_for(lambda d: by_id(d, "save-status").text == "Saved.", timeout=90,
                   message="the kept save was not sent when the server came back")
        assert stored(b) == typed
        assert b.execute_script("return localStorage.getItem(unsentKey('step1'))") is None
        b.wait_for(lambda d: not by_id(d, "notice").is_displayed() or
                   "not answering" not in by_id(d, "notice").text, timeout=30)
        assert "Not saved" not in b.execute_script("return document.body.innerText")

        # a text kept in this browser from an earlier visit (a reload while the server was
        # away) comes back into the editor and is saved
        version = b.execute_script("return page.version")
        later = typed + "# and this, kept over a reload\n"
        b.execute_script("localStorage.setItem(unsentKey('step1'), JSON.stringify("
                         "{step: 'step1', content: arguments[0], base: arguments[1], force: false}))",
                         later, version)
        b.refresh()
        ready(b)
        b.wait_for(lambda d: by_id(d, "save-status").text == "Saved.", timeout=60)
        assert by_id(b, "code").get_attribute("value") == later
        assert stored(b) == later


def test_a_check_cut_by_kill_9_shows_its_result_by_itself_after_the_restart(tmp_path):
    slow = "import time\ntime.sleep(4)  # a slow import: the check is still running at the kill\n" + WRONG
    with ann_on_step1(tmp_path) as (run, b):
        set_editor(b, slow)
        by_id(b, "save").click()
        b.wait_for(lambda d: d.find_elements("id", "checking"), timeout=60)
        n = reports_drawn(b)
        run["host"].kill9()
        b.wait_for(lambda d: d.find_elements("id", "check-refused"), timeout=60,
                   message="the page did not say the check was cut")
        assert "class server" in by_id(b, "check-refused").text
        run["host"] = HostProcess(tmp_path / "class", port=run["host"].port)
        b.wait_for(lambda d: by_id(d, "report-body").get_attribute("data-status") in ("failed", "timeout", "error"),
                   timeout=180, message="the result of the check run again never reached the page")
        # nobody clicked: the result came by the event stream, or with the page's catching up
        assert "elementwise" in by_id(b, "report-body").text or reports_drawn(b) > n
        assert not b.find_elements("id", "check-refused")


def test_checking_too_often_keeps_the_last_report_and_checks_again_by_itself(tmp_path):
    with ann_on_step1(tmp_path) as (run, b):
        set_editor(b, WRONG)
        refused = False
        for _ in range(12):  # the class allows a burst of 3 checks, then one per 4 s
            before = reports_drawn(b)
            by_id(b, "check").click()
            b.wait_for(lambda d, n=before: reports_drawn(d) > n or d.find_elements("id", "check-refused"),
                       timeout=180)
            if b.find_elements("id", "check-refused"):
                refused = True
                break
        assert refused, "the class never refused a check"
        body = by_id(b, "report-body").text
        assert "elementwise-product" in body, "the last report was not kept on screen"
        assert "checks again by itself" in by_id(b, "check-refused").text
        n = reports_drawn(b)
        b.wait_for(lambda d: reports_drawn(d) > n, timeout=120,
                   message="the page did not check again by itself after the wait")
        assert not b.find_elements("id", "check-refused")

        # Earlier versions: each version's check result, and what changed
        set_editor(b, RIGHT)
        by_id(b, "save").click()
        b.wait_for(lambda d: by_id(d, "report-body").get_attribute("data-status") == "passed", timeout=180)
        b.find_element("css selector", "#versions summary").click()
        b.wait_for(lambda d: len(d.find_elements("css selector", "#version-list > li")) == 2)
        items = b.find_elements("css selector", "#version-list > li")
        b.wait_for(lambda d: "passed" in d.find_elements("css selector", "#version-list > li")[0].text)
        assert "elementwise-product" in items[1].text
        items[0].find_element("css selector", "details summary").click()
        b.wait_for(lambda d: d.find_elements("css selector", "#version-list .diff ins"))
        assert "einsum" in b.find_element("css selector", "#version-list .diff").text


def test_join_and_lesson_pages_pass_axe_and_the_favicon_is_served(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        with browser(1280, 900) as b:
            b.get(f"{h.base}/join/{h.join_code}")
            bad = axe_violations(b)
            assert not bad, "join page:\n" + "\n".join(bad)
            join(b, h, "Ann")
            b.get(f"{h.base}/step/step1")
            ready(b)
            set_editor(b, WRONG)
            by_id(b, "check").click()
            b.wait_for(lambda d: "elementwise-product" in by_id(d, "report-body").text, timeout=180)
            b.find_element("css selector", "#versions summary").click()
            b.wait_for(lambda d: d.find_elements("css selector", "#version-list > li"))
            bad = axe_violations(b)
            assert not bad, "lesson page:\n" + "\n".join(bad)
            favicon = b.execute_script(
                "return fetch('/favicon.ico').then((r) => [r.status, r.headers.get('content-type')])")
            assert favicon == [200, "image/x-icon"]
            assert not [e for e in b.console_errors() if "favicon" in e]
    finally:
        h.stop()
