"""`attn-practice serve` in a real headless Chromium, driven as a learner drives it.

Write a wrong step 1 in the page, save with Ctrl+S, see the failure and the
named mistake; fix it, see the pass and the solution; save the file from
"another editor" and see the page reload and re-check by itself; a conflict
when both changed; the "it" row of the heatmap; a q slider; the d_k slider;
the phone width. Screenshots go to ATTN_PRACTICE_SCREENSHOTS (default: a
`screenshots` folder in the test's tmp dir), named after what they show.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from browser import browser, screenshot
from serve_helpers import Served

pytestmark = pytest.mark.slow

WRONG = textwrap.dedent("""\
    import numpy as np


    def dot_scores(Q, K):
        return np.asarray(Q) @ np.asarray(K).T
""")
RIGHT = textwrap.dedent("""\
    import numpy as np


    def dot_scores(Q, K):
        return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
""")
ELEMENTWISE = textwrap.dedent("""\
    import numpy as np


    def dot_scores(Q, K):
        return np.asarray(Q) * np.asarray(K)
""")


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ATTN_PRACTICE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def served(tmp_path: Path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    s.root = tmp_path / "ws"
    yield s
    s.stop()
    assert s.returncode == 0


def by_id(b, id_: str):
    from selenium.webdriver.common.by import By

    return b.find_element(By.ID, id_)


def set_editor(b, text: str) -> None:
    """Replace the editor's text as typing would (an input event), without auto-indent."""
    b.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                     "t.dispatchEvent(new Event('input', {bubbles: true}));", text)


def report_text(b) -> str:
    return by_id(b, "report-body").text


def open_page(b, s: Served) -> None:
    b.get(s.url)
    b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
               message="the page never became ready")


def test_step1_wrong_then_right_then_edited_elsewhere(served, shots):
    from selenium.webdriver.common.keys import Keys

    with browser(1280, 900) as b:
        open_page(b, served)
        assert "Step 1" in by_id(b, "title").text
        assert "token=" not in b.current_url  # the token left the address bar
        # Tab indents inside the editor (our own script)
        code = by_id(b, "code")
        set_editor(b, "")
        code.click()
        code.send_keys(Keys.TAB, "x")
        assert code.get_attribute("value") == "    x"
        assert "1\n" in by_id(b, "gutter").text + "\n"

        # a wrong step 1, saved with Ctrl+S: the failure and the named mistake
        set_editor(b, WRONG)
        code.send_keys(Keys.CONTROL, "s")
        b.wait_for(lambda d: "Known mistake" in report_text(d), message="no failure report")
        text = report_text(b)
        assert "transpose-all-axes" in text and "failed" in text and "✗" in text
        assert "Your code (most recent call last)" in text and "What now" in text
        assert (served.root / "step1_scores.py").read_text() == WRONG
        b.wait_for(lambda d: "failed" in by_id(d, "step-list").text)
        screenshot(b, shots / "serve-step1-failed.png")
        b.set_size(1200, 1650)  # the README's picture: the editor, the report, the named mistake
        b.execute_script("document.getElementById('editor-section').scrollIntoView()")
        screenshot(b, shots / "serve-step1-failed-view.png", full_page=False)
        b.set_size(1280, 900)
        assert by_id(b, "solution").get_attribute("hidden") is not None  # not before a pass

        # fixed: the pass, the solution, the sidebar
        set_editor(b, RIGHT)
        by_id(b, "check").click()
        b.wait_for(lambda d: "step1 passed" in report_text(d), message="no pass")
        b.wait_for(lambda d: by_id(d, "solution").is_displayed(), message="no solution after a pass")
        assert "def dot_scores" in by_id(b, "solution-code").text
        assert (served.root / "step1_scores.py").read_text() == RIGHT

        # saved from another editor while the page is open: reloaded and re-checked by itself
        (served.root / "step1_scores.py").write_text(ELEMENTWISE)
        b.wait_for(lambda d: by_id(d, "code").get_attribute("value") == ELEMENTWISE,
                   message="the page did not reload the file")
        b.wait_for(lambda d: "elementwise-product" in report_text(d), message="no re-check")
        assert "changed outside this page" in by_id(b, "notice").text

        # both changed: the page says so and keeps the other version in backups/
        set_editor(b, RIGHT + "\n# mine\n")
        (served.root / "step1_scores.py").write_text(WRONG)
        b.wait_for(lambda d: by_id(d, "conflict").is_displayed(), message="no conflict warning")
        screenshot(b, shots / "serve-conflict.png", full_page=False)
        by_id(b, "conflict-keep").click()
        b.wait_for(lambda d: (served.root / "step1_scores.py").read_text() == RIGHT + "\n# mine\n")
        backups = [p.read_text() for p in (served.root / "backups").glob("step1_scores-*.py")]
        assert WRONG in backups
        b.wait_for(lambda d: "step1 passed" in report_text(d))
        assert not [e for e in b.console_errors() if "favicon" not in e]


def test_the_three_widgets(served, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with browser(1280, 900) as b:
        open_page(b, served)
        b.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "#heatmap .row-button"))
        assert "reference" in by_id(b, "heatmap-source").text
        # the heatmap: "it" is chosen first; choose another row, then "it" again by clicking
        rows = b.find_elements(By.CSS_SELECTOR, "#heatmap .row-button")
        rows[1].click()
        b.wait_for(lambda d: by_id(d, "heatmap-bars").get_attribute("data-row") == "animal")
        rows[1].send_keys(Keys.ARROW_DOWN)  # the keyboard moves between rows too
        b.wait_for(lambda d: by_id(d, "heatmap-bars").get_attribute("data-row") == "didn't")
        it = next(r for r in rows if r.get_attribute("data-token") == "it")
        it.click()
        b.wait_for(lambda d: by_id(d, "heatmap-bars").get_attribute("data-row") == "it")
        assert "most weight on “animal”" in by_id(b, "heatmap-summary").text
        assert it.get_attribute("aria-pressed") == "true"

        # the worked example: the lesson's numbers, then a q component moves
        b.wait_for(lambda d: "[5.679, 1.546]" in by_id(d, "example-stages").text)
        slider = by_id(b, "q1")
        slider.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
        b.wait_for(lambda d: "[5.679, 1.546]" not in by_id(d, "example-stages").text,
                   message="the output did not change")
        assert by_id(b, "q1-value").text == "0.3"
        assert "server" in by_id(b, "example-timing").text

        # the d_k slider: 64 -> 1024 and the unscaled weights saturate
        b.wait_for(lambda d: by_id(d, "scale-out").get_attribute("data-dk") == "64")
        dk = by_id(b, "dk")
        dk.send_keys(Keys.END)
        b.wait_for(lambda d: by_id(d, "scale-out").get_attribute("data-dk") == "1024")
        assert by_id(b, "dk-value").text == "1024"
        assert dk.get_attribute("aria-valuetext") == "d_k = 1024"
        cells = [c.text for c in b.find_elements(By.CSS_SELECTOR, "#scale-out td.num")]
        raw_max, scaled_max = float(cells[2]), float(cells[3])
        assert raw_max > 0.9 > scaled_max
        b.execute_script("document.getElementById('widgets').scrollIntoView()")
        screenshot(b, shots / "serve-widgets.png", full_page=False)
        assert not [e for e in b.console_errors() if "favicon" not in e]


def test_phone_width_and_keyboard(served, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with browser(390, 844) as b:
        open_page(b, served)
        # keyboard: the skip link comes first and leads to the lesson
        b.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        assert b.switch_to.active_element.get_attribute("class") == "skip"
        assert not by_id(b, "sidebar").is_displayed()
        menu = by_id(b, "menu")
        menu.click()
        assert by_id(b, "sidebar").is_displayed() and menu.get_attribute("aria-expanded") == "true"
        width = b.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390 + 1, "the page scrolls sideways at a phone's width"
        # every control is labelled for a screen reader
        for control in b.find_elements(By.CSS_SELECTOR, "input[type=range]"):
            assert b.find_elements(By.CSS_SELECTOR, f"label[for='{control.get_attribute('id')}']")
        assert by_id(b, "code").get_attribute("aria-label") == "Your code: step1_scores.py"
        screenshot(b, shots / "serve-phone.png", full_page=False)


def test_steps_1_to_5_in_the_page_then_the_widgets_use_your_code(served, shots):
    from conftest import solution_source
    from selenium.webdriver.common.by import By

    with browser(1280, 900) as b:
        open_page(b, served)
        for n in range(1, 6):
            if n > 1:  # the pass links to the next step, as a learner would follow it
                b.find_element(By.CSS_SELECTOR, f'.next-box a[href="/step/step{n}"]').click()
                b.wait_for(lambda d, n=n: d.execute_script("return document.body.dataset.ready") == "true"
                           and f"Step {n}:" in by_id(d, "title").text)
            set_editor(b, solution_source(f"step{n}"))
            by_id(b, "check").click()
            b.wait_for(lambda d, n=n: f"step{n} passed" in report_text(d), message=f"step{n} did not pass")
        b.wait_for(lambda d: "All steps pass" in report_text(d) or "Next:" in report_text(d))
        b.wait_for(lambda d: "your code" in by_id(d, "heatmap-source").text,
                   message="the widgets did not switch to the learner's code")
        b.wait_for(lambda d: "your code" in by_id(d, "example-source").text)
        assert "[5.679, 1.546]" in by_id(b, "example-stages").text
        assert by_id(b, "step-list").text.count("passed") == 5
        b.execute_script("document.getElementById('widgets').scrollIntoView()")
        screenshot(b, shots / "serve-widgets-yours.png", full_page=False)
        assert not [e for e in b.console_errors() if "favicon" not in e]


def test_the_page_says_when_the_server_stops_and_keeps_the_text(served):
    with browser(1000, 800) as b:
        open_page(b, served)
        set_editor(b, "# typed but not saved\n")
        served.stop()
        assert served.returncode == 0
        b.wait_for(lambda d: "Lost the connection" in by_id(d, "notice").text)
        assert by_id(b, "code").get_attribute("value") == "# typed but not saved\n"
        by_id(b, "check").click()  # a request now fails with words, not a console exception
        b.wait_for(lambda d: "not answering" in by_id(d, "notice").text
                   or "not answering" in by_id(d, "save-status").text)
