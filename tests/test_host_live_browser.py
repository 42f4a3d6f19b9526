"""What a learner saw stays, in a real browser (headless Chromium): after a check, a reload of
the page and a resume in a fresh browser profile (another computer) show the same report
under a header that agrees with it, never "Not checked yet"; after the code changes, the
report stays, marked as being of an earlier version.
"""

from __future__ import annotations

import pytest
from browser import browser
from test_host_browser import by_id, join, set_editor
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow

WRONG = implementation("step1", "wrong_elementwise_product")


def _ready(b) -> None:
    b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
               message="the lesson page never became ready")


def _report(b) -> tuple[str, str | None, str | None]:
    body = by_id(b, "report-body")
    return body.text, body.get_attribute("data-status"), body.get_attribute("data-stale")


def test_a_reload_and_a_resume_elsewhere_keep_the_report(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        with browser(1100, 900) as ann:
            link = join(ann, h, "Ann")
            set_editor(ann, WRONG)
            by_id(ann, "check").click()
            ann.wait_for(lambda d: "elementwise-product" in by_id(d, "report-body").text, timeout=120,
                         message="no report naming the mistake")
            seen = by_id(ann, "report-body").text

            ann.refresh()
            _ready(ann)
            ann.wait_for(lambda d: "elementwise-product" in _report(d)[0], timeout=30,
                         message="a reload lost the report")
            text, status, stale = _report(ann)
            assert "Not checked yet" not in text and status == "failed" and stale == "false"
            assert "failed" in by_id(ann, "kind").text  # the header agrees with the report
            assert text == seen

        with browser(1100, 900) as elsewhere:  # a fresh profile: no cookie, only the link
            elsewhere.get(link)
            buttons = elsewhere.find_elements("css selector", "form button[type=submit]")
            if buttons:  # "Continue as Ann?"
                buttons[0].click()
            _ready(elsewhere)
            elsewhere.get(f"{h.base}/step/step1")
            _ready(elsewhere)
            elsewhere.wait_for(lambda d: "elementwise-product" in _report(d)[0], timeout=30,
                               message="a resume on another computer lost the report")
            assert _report(elsewhere)[1] == "failed"

            # new code saved (as from another tab) and not checked yet: the page's own Save also
            # checks, and that check may end before the reload or after it
            status = elsewhere.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/api/step/step1/save', {method: 'POST', headers: {'Content-Type':"
                " 'application/json', 'X-Attn-Token': document.querySelector("
                "'meta[name=\"attnp-token\"]').content}, body: JSON.stringify({content:"
                " arguments[0]})}).then((r) => done(r.status), () => done(0));",
                implementation("step1", "correct_einsum"))
            assert status == 200, status
            elsewhere.refresh()
            _ready(elsewhere)
            elsewhere.wait_for(lambda d: _report(d)[2] == "true", timeout=30,
                               message="the report of older code was not marked as such")
            assert "elementwise-product" in _report(elsewhere)[0]
            assert "changed since its last check" in by_id(elsewhere, "kind").text
    finally:
        h.stop()
