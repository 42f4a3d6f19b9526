"""The instructor's page for a class of 22 in real headless Chromium (issue 37, item 3 and 8).

One hosted class (`attn-practice host`, the console script) with 22 learners:
12 made the same step 1 mistake, one of them (Ann) fixed it, six pass, four
have not started. The instructor sees the misconceptions and the stuck list
in the first screen at 1280x800, above the grid; the grid sorts and
filters; a learner's drill-down opens in view with the focus inside, holds
every stored version with its check's result, the change between two, and
the code from the function on; Escape closes it and the focus goes back;
axe-core finds nothing critical or serious. A screenshot of the page is kept
in the test's temp folder (`teach-1280x800.png`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from axe import axe_violations
from browser import browser
from test_host_browser import by_id
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow

WRONG = implementation("step1", "wrong_elementwise_product")
RIGHT = implementation("step1", "correct_einsum")
FAILING = [f"Learner {i:02d}" for i in range(1, 12)]  # 11 still wrong, and Ann
PASSING = [f"Passer {i}" for i in range(1, 7)]
IDLE = [f"Idle {i}" for i in range(1, 5)]


def _work(h: HostProcess, name: str, texts: list[str]) -> None:
    c, token, _ = h.join(name)
    try:
        for text in texts:
            headers = {"X-Attn-Token": token}
            r = c.post("/api/step/step1/save", json={"content": text, "base": None}, headers=headers)
            assert r.status_code == 200, r.text
            r = c.post("/api/step/step1/check", json={}, headers=headers)
            assert r.status_code == 200, r.text
    finally:
        c.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("teach")
    h = HostProcess(folder / "class", "--jobs", "2")
    try:
        jobs = [("Ann", [WRONG, RIGHT + "\n# fixed: a matrix product now\n"])]
        jobs += [(n, [WRONG]) for n in FAILING]
        jobs += [(n, [RIGHT]) for n in PASSING]
        jobs += [(n, []) for n in IDLE]
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda job: _work(h, *job), jobs))
        yield h, folder
    finally:
        h.stop()


def open_teach(b, h):
    b.get(f"{h.base}/teach?key={h.key}")
    b.wait_for(lambda d: d.execute_script(
        "return document.querySelectorAll('#grid tbody tr[data-learner]').length") == 22,
        message="the grid never showed the 22 learners")


def shown_names(b) -> list[str]:
    return b.execute_script("return [...document.querySelectorAll('#grid tbody tr[data-learner] th')]"
                            ".map((th) => th.textContent)")


def test_the_first_screen_shows_what_needs_attention(lab):
    h, folder = lab
    with browser(1280, 800) as b:
        open_teach(b, h)
        b.wait_for(lambda d: "elementwise-product" in by_id(d, "misconceptions").text)
        top = b.execute_script(
            "const r = (s) => document.querySelector(s).getBoundingClientRect();"
            "return {mis: r('#misconceptions tbody tr').bottom, stuck: r('#stuck-h').top,"
            "        grid: r('#grid').top, h: innerHeight};")
        assert top["mis"] <= top["h"], f"the misconception row is below the first screen: {top}"
        assert top["stuck"] <= top["h"], f"the stuck list is below the first screen: {top}"
        assert top["grid"] > top["mis"], "the grid is not below the misconceptions"
        b.screenshot(folder / "teach-1280x800.png", full_page=False)
        b.screenshot(folder / "teach-full.png")
        row = by_id(b, "misconceptions").find_element("css selector", "tr[data-id='elementwise-product']")
        cells = row.find_elements("tag name", "td")
        assert cells[2].text == "11"
        # the catalogue's Markdown is rendered (the nudge's *and* is emphasis), never shown raw
        raw = b.execute_script(  # outside <code>, no Markdown mark is left as text
            "return [...arguments[0].querySelectorAll('td.prose')].map((td) => {"
            "  const c = td.cloneNode(true); c.querySelectorAll('code').forEach((x) => x.remove());"
            "  return c.textContent; }).filter((t) => /[*`]/.test(t));", row)
        assert not raw, raw
        assert row.find_elements("css selector", "td em") and row.find_elements("css selector", "td code")
        grid = by_id(b, "grid").text
        assert "1 checks" not in grid and "1 hints" not in grid
        assert "1 check" in grid  # the six who passed at their first check
        idle = b.execute_script("return [...document.querySelectorAll('#grid td[data-standing=\"not started\"]')]"
                                ".map((td) => td.textContent)")
        assert idle and all(t.strip() == "· not started" for t in idle), idle[:3]
        assert not [e for e in b.console_errors() if "favicon" not in e]


def test_the_grid_sorts_and_filters(lab):
    h, _ = lab
    from selenium.webdriver.support.ui import Select

    with browser(1280, 800) as b:
        open_teach(b, h)
        names = shown_names(b)
        assert names == sorted(names, key=str.lower)
        # a keyboard user on a name keeps the focus there while the live page redraws
        b.execute_script("arguments[0].focus()",
                         b.find_element("css selector", "#grid tbody tr:nth-child(3) th button"))
        key = b.execute_script("return document.activeElement.dataset.focus")
        assert key and key.startswith("grid:")
        b.execute_script("return refresh()")
        assert b.execute_script("return document.activeElement.dataset.focus") == key
        # a list that fires only "change" (some browsers, some drivers) filters at once, not at
        # the next refresh 15 s later: the redraw is synchronous, so the very next read sees it
        b.execute_script("document.getElementById('filter-step').value = 'step1';"
                         "const s = document.getElementById('filter-standing');"
                         "s.value = 'failed'; s.dispatchEvent(new Event('change'));")
        assert len(shown_names(b)) == 11
        b.execute_script("document.getElementById('filter-step').value = '';"
                         "const s = document.getElementById('filter-standing');"
                         "s.value = ''; s.dispatchEvent(new Event('change'));")
        assert len(shown_names(b)) == 22
        by_id(b, "filter-name").send_keys("ann")
        b.wait_for(lambda d: shown_names(d) == ["Ann"])
        by_id(b, "filter-clear").click()
        b.wait_for(lambda d: len(shown_names(d)) == 22)
        Select(by_id(b, "filter-step")).select_by_value("step1")
        Select(by_id(b, "filter-standing")).select_by_value("failed")
        b.wait_for(lambda d: len(shown_names(d)) == 11)
        assert "Showing 11 of 22 learners" in by_id(b, "shown").text
        Select(by_id(b, "filter-standing")).select_by_value("not started")
        b.wait_for(lambda d: sorted(shown_names(d)) == IDLE)
        Select(by_id(b, "filter-standing")).select_by_value("")
        Select(by_id(b, "filter-mistake")).select_by_value("elementwise-product")
        b.wait_for(lambda d: len(shown_names(d)) == 11 and "Ann" not in shown_names(d))
        by_id(b, "filter-clear").click()
        b.wait_for(lambda d: len(shown_names(d)) == 22)
        Select(by_id(b, "sort")).select_by_value("ahead")
        b.wait_for(lambda d: set(shown_names(d)[:7]) == {"Ann", *PASSING})
        Select(by_id(b, "sort")).select_by_value("behind")
        b.wait_for(lambda d: set(shown_names(d)[-7:]) == {"Ann", *PASSING})
        # a step's column header sorts by standing there, failing first (keyboard: a button)
        header = b.find_element("css selector", "#grid thead button[data-focus='sort:step1']")
        header.send_keys("\n")
        b.wait_for(lambda d: set(shown_names(d)[:11]) == set(FAILING))
        # a misconception's row leads to those learners in the grid
        b.find_element("css selector", "#misconceptions tr[data-id='elementwise-product'] button.link.small").click()
        b.wait_for(lambda d: sorted(shown_names(d)) == sorted(FAILING))
        assert b.execute_script("return document.activeElement.id") == "grid-h"


def press_enter(b, css: str, text: str) -> None:
    """Enter on the first element `css` finds, which must read `text`. The grid is drawn
    again on every live update: an element found just before one is gone, so find it anew."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.keys import Keys

    for _ in range(20):
        try:
            found = b.find_element("css selector", css)
            assert found.text == text
            found.send_keys(Keys.ENTER)
            return
        except StaleElementReferenceException:
            time.sleep(0.2)
    raise AssertionError(f"{css} was drawn again under every one of 20 tries")


def test_the_drill_down_opens_in_view_and_closes_back(lab):
    h, folder = lab
    from selenium.webdriver.common.keys import Keys

    with browser(1280, 800) as b:
        open_teach(b, h)
        b.execute_script("window.scrollTo(0, document.body.scrollHeight)")  # opened from far down the page
        press_enter(b, "#grid tbody th button[data-learner]", "Ann")
        b.wait_for(lambda d: d.execute_script("return document.getElementById('drill').open"),
                   message="the drill-down did not open")
        box = b.execute_script(
            "const r = document.getElementById('drill').getBoundingClientRect();"
            "return {top: r.top, bottom: r.bottom, h: innerHeight,"
            " inside: document.getElementById('drill').contains(document.activeElement)};")
        assert box["inside"], "the focus did not move into the drill-down"
        assert 0 <= box["top"] < box["h"] and box["bottom"] <= box["h"] + 1, box
        drill = by_id(b, "drill")
        assert "Ann" in by_id(b, "drill-h").text
        rows = drill.find_elements("css selector", "details[data-step='step1'] .versions-table tbody tr")
        assert len(rows) == 2
        assert "passed" in rows[0].text and "elementwise-product" in rows[1].text
        # the change between the two versions, as a line diff
        diff = drill.find_element("css selector", "details[data-step='step1'] .diff")
        assert "+ # fixed: a matrix product now" in diff.text
        assert drill.find_elements("css selector", ".diff del") and drill.find_elements("css selector", ".diff ins")
        # the code from the function on: not the file's docstring cut in the middle
        code = drill.find_element("css selector", "details[data-step='step1'] .code-wrap pre").text
        assert code.lstrip().startswith("def dot_scores("), code[:80]
        b.screenshot(folder / "teach-drill.png", full_page=False)
        assert not axe_violations(b), axe_violations(b)
        b.switch_to.active_element.send_keys(Keys.ESCAPE)
        b.wait_for(lambda d: not d.execute_script("return document.getElementById('drill').open"))
        assert b.execute_script("return document.activeElement.dataset.learner") is not None
        assert b.switch_to.active_element.text == "Ann"


def test_the_instructor_page_passes_axe(lab):
    h, _ = lab
    with browser(1280, 800) as b:
        b.get(f"{h.base}/teach")  # no key yet: the sign-in page
        bad = axe_violations(b)
        assert not bad, "sign-in page:\n" + "\n".join(bad)
        open_teach(b, h)
        bad = axe_violations(b)
        assert not bad, "\n".join(bad)
        favicon = b.execute_script(
            "return fetch('/favicon.ico').then((r) => [r.status, r.headers.get('content-type')])")
        assert favicon == [200, "image/x-icon"]
