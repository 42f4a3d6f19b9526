"""The page tells the truth, in a real headless Chromium (issue 20, items 1-3 and 7).

Driven as a learner would: break step 3 in the page (it raises; then it
forgets the exp) and read each widget's label and numbers against what the
learner's code computes; break a step on disk while `serve` is stopped,
restart it with the tab open and watch the tab reconnect by itself, catch
up and never show ✓ for the changed file; reload and see the last report;
rotate the token and see the page say what to do; check with the keyboard
on the heatmap and keep the focus.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml
from browser import browser
from conftest import correct_solutions, run
from serve_helpers import Served

pytestmark = pytest.mark.slow

RAISES = textwrap.dedent("""\
    import numpy as np


    def softmax(x, axis=-1):
        raise ZeroDivisionError("my softmax is broken")
""")
NO_EXP = textwrap.dedent("""\
    import numpy as np


    def softmax(x, axis=-1):
        x = np.asarray(x, dtype=float)
        return x / x.sum(axis=axis, keepdims=True)
""")


def by_id(b, id_: str):
    from selenium.webdriver.common.by import By

    return b.find_element(By.ID, id_)


def ready(b) -> None:
    b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
               message="the page never became ready")


def set_editor(b, text: str) -> None:
    b.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                     "t.dispatchEvent(new Event('input', {bubbles: true}));", text)


def check_and_wait(b, timeout: float = 120) -> None:
    """Click Check and wait for its report to be drawn (however quick or slow)."""
    before = int(b.execute_script("return document.body.dataset.reports || '0'"))
    by_id(b, "check").click()
    b.wait_for(lambda d: int(d.execute_script("return document.body.dataset.reports || '0'")) > before,
               timeout=timeout, message="no report came")


def sidebar_status(b, step: str) -> str:
    return b.execute_script(f"const a = document.querySelector('#step-list a[data-step=\"{step}\"]');"
                            "return a ? a.dataset.status : null;")


def stage_source(b, stage: str) -> str:
    return b.execute_script(
        f"const c = document.querySelector('#example-stages td.num[data-stage=\"{stage}\"]');"
        "return c ? c.dataset.source : null;")


@pytest.fixture
def passed_ws(tmp_path):
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    assert run(["check", "--all"], ws).exit_code in (0, 1)
    state = yaml.safe_load((ws / "attn-practice.yaml").read_text())
    assert all(state["steps"][f"step{i}"]["status"] == "passed" for i in range(1, 6))
    return ws


def test_breaking_step3_in_the_page_relabels_every_widget(passed_ws, tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        with browser(1280, 900) as b:
            b.get(f"{s.base}/step/step3?token={s.token}")
            ready(b)
            b.wait_for(lambda d: "Computed with your code: your steps 1, 2, 3, 4, 5."
                       in by_id(d, "example-source").text)
            # 1. step 3 raises: the reference softmax stands in, on the learner's own input, and says why
            set_editor(b, RAISES)
            check_and_wait(b)
            assert "step3 failed" in by_id(b, "report-body").text
            why = "the reference softmax (step 3), because your step 3 raises on this input"
            for widget in ("example", "heatmap", "scale"):
                b.wait_for(lambda d, w=widget: why in by_id(d, f"{w}-source").text,
                           message=f"the {widget} label did not change")
            assert "your steps 1, 2, 4" in by_id(b, "example-source").text
            assert stage_source(b, "weights") == "reference" and stage_source(b, "scores") == "yours"
            assert "[5.679, 1.546]" in by_id(b, "example-stages").text  # the reference on the right input
            # 2. step 3 forgets the exp: the learner's numbers, the reference's beside them
            set_editor(b, NO_EXP)
            check_and_wait(b)
            b.wait_for(lambda d: sidebar_status(d, "step3") == "failed"
                       and "changed since" not in by_id(d, "example-source").text)
            b.wait_for(lambda d: "Computed with your code: your steps 1, 2, 3, 4, 5."
                       in by_id(d, "example-source").text)
            b.wait_for(lambda d: stage_source(d, "weights") == "yours")
            table = by_id(b, "example-stages").text
            assert "[0.667, 0, 0.333] (yours)" in table and "[7.333, 0.667] (yours)" in table
            assert "[0.506, 0.186, 0.307] ← first departure" in table
            assert "first stage that departs from the reference: weights (step 3)" in \
                by_id(b, "heatmap-source").text
            assert sidebar_status(b, "step3") == "failed"
            b.wait_for(lambda d: "the reference: largest weight" in by_id(d, "scale-out").text)
            assert not [e for e in b.console_errors() if "favicon" not in e]
    finally:
        s.stop()


def test_restart_with_the_tab_open_reconnects_and_never_shows_a_changed_file_as_passed(passed_ws, tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    port = s.port
    try:
        with browser(1280, 900) as b:
            b.get(f"{s.base}/step/step2?token={s.token}")
            ready(b)
            check_and_wait(b)
            assert "step2 passed" in by_id(b, "report-body").text
            b.refresh()  # a reload: the token is in the page's storage, the last report is kept
            ready(b)
            assert "step2 passed" in by_id(b, "report-body").text
            assert by_id(b, "report-body").get_attribute("data-stale") == "false"
            s.stop()
            b.wait_for(lambda d: "Lost the connection" in by_id(d, "notice").text)
            # broken on disk while the server is stopped
            path = passed_ws / "step2_scale.py"
            path.write_text(path.read_text().replace("np.sqrt(d_k)", "d_k"))
            s = Served(["ws", "--port", str(port), "--no-open"], tmp_path)
            b.wait_for(lambda d: d.execute_script("return document.body.dataset.connected") == "true",
                       timeout=60, message="the tab did not reconnect by itself")
            b.wait_for(lambda d: sidebar_status(d, "step2") in ("stale", "failed"))
            assert sidebar_status(b, "step2") != "passed"
            # serve re-checks it in the background; the tab shows the new result
            b.wait_for(lambda d: sidebar_status(d, "step2") == "failed", timeout=120)
            b.wait_for(lambda d: "step2 failed" in by_id(d, "report-body").text, timeout=60)
            assert "Lost the connection" not in by_id(b, "notice").text
            b.refresh()
            ready(b)
            assert "step2 failed" in by_id(b, "report-body").text  # the last report again
    finally:
        s.stop()


def test_a_rotated_token_is_said_in_words(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    port = s.port
    try:
        with browser(1000, 800) as b:
            b.get(s.url)
            ready(b)
            s.stop()
            s = Served(["ws", "--port", str(port), "--no-open", "--rotate-token"], tmp_path)
            b.wait_for(lambda d: "open the link" in by_id(d, "notice").text.lower(), timeout=60,
                       message="the page did not say what to do")
            assert "restarted with a new token" in by_id(b, "notice").text
    finally:
        s.stop()


def test_a_check_keeps_the_keyboard_focus_on_the_heatmap(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        with browser(1280, 900) as b:
            b.get(s.url)
            ready(b)
            b.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "#heatmap .row-button"))
            row = b.find_element(By.CSS_SELECTOR, '#heatmap .row-button[data-token="animal"]')
            row.click()
            row.send_keys(Keys.ARROW_DOWN)  # the keyboard moves to the next row
            token = b.execute_script("return document.activeElement.dataset.token")
            assert token
            b.execute_script("document.getElementById('check').click()")  # a check, as a save makes one
            b.wait_for(lambda d: "step1" in by_id(d, "report-body").text
                       and d.execute_script("return document.getElementById('report').getAttribute('aria-busy')")
                       == "false", timeout=120)
            b.wait_for(lambda d: d.execute_script(
                "return document.activeElement.dataset.token") == token,
                message="the focus dropped when the heatmap was rebuilt")
            assert b.execute_script("return document.activeElement.tagName") == "BUTTON"
            task = by_id(b, "task").text
            assert "Write dot_scores" not in task and task.count("dot_scores(Q, K)") == 1
    finally:
        s.stop()


def test_a_save_in_another_editor_relabels_the_widgets(passed_ws, tmp_path):
    """Saved on disk while the page is open: the watcher re-checks it, the labels follow."""
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        with browser(1280, 900) as b:
            b.get(f"{s.base}/step/step1?token={s.token}")
            ready(b)
            b.wait_for(lambda d: "Computed with your code: your steps 1, 2, 3, 4, 5."
                       in by_id(d, "heatmap-source").text)
            (passed_ws / "step3_softmax.py").write_text(RAISES)
            b.wait_for(lambda d: "because your step 3 raises on this input"
                       in by_id(d, "heatmap-source").text, timeout=120,
                       message="the heatmap's label did not follow the save on disk")
            b.wait_for(lambda d: sidebar_status(d, "step3") == "failed", timeout=120)
            assert "the reference softmax (step 3)" in by_id(b, "example-source").text
            assert stage_source(b, "weights") == "reference"
    finally:
        s.stop()
