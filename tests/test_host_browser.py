"""A hosted class in real browsers (headless Chromium): two learners and the instructor at once.

Both learners join through the join link and work in their own browser; the
instructor's grid and misconception table change live as they check; a
learner cannot open the instructor's views or another's version; the server
restarts with every tab open and the pages carry on by themselves.
"""

from __future__ import annotations

import pytest
from browser import browser
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow


def by_id(b, id_: str):
    from selenium.webdriver.common.by import By

    return b.find_element(By.ID, id_)


def set_editor(b, text: str) -> None:
    b.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                     "t.dispatchEvent(new Event('input', {bubbles: true}));", text)


def join(b, h: HostProcess, name: str) -> str:
    b.get(f"{h.base}/join/{h.join_code}")
    by_id(b, "display_name").send_keys(name)
    b.find_element("css selector", "button[type=submit]").click()
    b.wait_for(lambda d: d.find_elements("id", "resume-link"), message="no resume link")
    link = by_id(b, "resume-link").text
    assert "Bookmark this link" in b.page_source
    by_id(b, "start").click()
    b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
               message="the lesson page never became ready")
    return link


def grid_cell(d, name: str, step: str) -> str:
    return d.execute_script(
        "for (const tr of document.querySelectorAll('#grid tbody tr')) {"
        "  if (tr.querySelector('th').textContent.startsWith(arguments[0])) {"
        "    const td = tr.querySelector(`td[data-step=\"${arguments[1]}\"]`);"
        "    return td ? td.dataset.standing : null; } } return null;", name, step)


def test_two_learners_and_the_instructor_live_then_a_restart(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        with browser(1280, 900) as teach, browser(1100, 900) as ann, browser(1100, 900) as ben:
            teach.get(f"{h.base}/teach?key={h.key}")
            teach.wait_for(lambda d: "key=" not in d.current_url and d.find_elements("id", "grid"))
            join(ann, h, "Ann")
            teach.wait_for(lambda d: grid_cell(d, "Ann", "step1") == "not started",
                           message="Ann never appeared in the grid")
            set_editor(ann, implementation("step1", "wrong_elementwise_product"))
            by_id(ann, "check").click()
            ann.wait_for(lambda d: "failed" in by_id(d, "report-body").text, timeout=120,
                         message="no failure report for Ann")
            teach.wait_for(lambda d: grid_cell(d, "Ann", "step1") == "failed",
                           message="the grid did not update live")
            teach.wait_for(lambda d: "elementwise-product" in by_id(d, "misconceptions").text,
                           message="the misconception table did not update live")
            assert "Ann" in by_id(teach, "misconceptions").text

            join(ben, h, "Ben")
            set_editor(ben, implementation("step1", "correct_einsum"))
            by_id(ben, "check").click()
            ben.wait_for(lambda d: "passed" in by_id(d, "report-body").text, timeout=120)
            ben.wait_for(lambda d: by_id(d, "solution").is_displayed(), message="no solution")
            teach.wait_for(lambda d: grid_cell(d, "Ben", "step1") == "passed")
            # Ben cannot use the instructor's views, nor Ann's version by its id
            ann_version = ann.execute_script("return page.version")
            ben.get(f"{h.base}/teach/api/class")
            assert "403" in ben.page_source or "instructor" in ben.page_source
            ben.get(f"{h.base}/api/version/{ann_version}")
            assert "no such version" in ben.page_source
            ben.get(f"{h.base}/step/step1")
            ben.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true")

            # the server restarts with every tab open: the pages reconnect and go on saving
            h.stop()
            ann.wait_for(lambda d: "Lost the connection" in by_id(d, "notice").text, timeout=30)
            h2 = HostProcess(tmp_path / "class", port=h.port)
            h = h2
            ann.wait_for(lambda d: by_id(d, "notice").is_displayed() is False, timeout=30,
                         message="Ann's page did not reconnect")
            set_editor(ann, implementation("step1", "correct_einsum"))
            by_id(ann, "save").click()
            ann.wait_for(lambda d: by_id(d, "save-status").text.startswith("Saved"))
            by_id(ann, "check").click()
            ann.wait_for(lambda d: "passed" in by_id(d, "report-body").text, timeout=120)
            teach.wait_for(lambda d: grid_cell(d, "Ann", "step1") == "passed", timeout=30,
                           message="the instructor's page did not carry on after the restart")
            assert not [e for e in ann.console_errors() if "favicon" not in e and "Failed to load" not in e]
    finally:
        h.stop()
