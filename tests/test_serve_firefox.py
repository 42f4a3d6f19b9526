"""`attn-practice serve` in a real headless Firefox (the issue asks for Chromium and Firefox).

Debian has no geckodriver package, so Firefox is driven over its own
Marionette protocol (`marionette-driver`, in the test extras), with Debian's
`firefox-esr`. The Chromium suite (`test_serve_browser.py`) drives the whole
learner path; this one checks that the same page works in Firefox: it gets
ready, a wrong step 1 checked from the page names the mistake, the heatmap's
"it" row and a q slider respond, and the page raises no script error.
Skips, saying why, where Firefox or the driver is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import Served

pytestmark = pytest.mark.slow

FIREFOX = ("/usr/bin/firefox-esr", "/usr/bin/firefox")
WRONG = textwrap.dedent("""\
    import numpy as np


    def dot_scores(Q, K):
        return np.asarray(Q) @ np.asarray(K).T
""")


def _firefox() -> str:
    for path in (os.environ.get("ATTN_PRACTICE_FIREFOX", ""), *FIREFOX):
        if path and os.access(path, os.X_OK):
            return path
    found = shutil.which("firefox-esr") or shutil.which("firefox")
    if found is None:
        pytest.skip("no Firefox found (apt-get install firefox-esr, or set ATTN_PRACTICE_FIREFOX)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def firefox(tmp_path: Path) -> Iterator[object]:
    driver = pytest.importorskip("marionette_driver.marionette",
                                 reason="marionette-driver is not installed (pip install -e '.[test]')")
    binary = _firefox()
    m = driver.Marionette(host="127.0.0.1", port=_free_port(), bin=binary, headless=True,
                          startup_timeout=120, workspace=str(tmp_path),
                          gecko_log=str(tmp_path / "gecko.log"))  # not in the checkout
    try:
        m.start_session()
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start here is a skip, not a failure
        m.cleanup()
        pytest.skip(f"Firefox could not start headless here: {exc}")
    try:
        yield m
    finally:
        m.delete_session()
        m.cleanup()


def _wait(m: object, condition, message: str, timeout: float = 60.0) -> None:
    from marionette_driver import Wait

    Wait(m, timeout=timeout, interval=0.1).until(condition, message=message)


def _text(m: object, element_id: str) -> str:
    return m.execute_script(f"return document.getElementById('{element_id}').innerText")


def test_the_page_works_in_firefox(firefox, tmp_path: Path):
    m = firefox
    served = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        m.navigate(served.url)
        _wait(m, lambda mm: mm.execute_script("return document.body.dataset.ready") == "true",
              "the page never became ready in Firefox")
        assert "Step 1" in _text(m, "title")

        # a wrong step 1 written in the page and checked: the failure names the mistake
        m.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                         "t.dispatchEvent(new Event('input', {bubbles: true}));", script_args=[WRONG])
        m.execute_script("document.getElementById('check').click()")
        _wait(m, lambda mm: "Known mistake" in _text(mm, "report-body"), "no failure report in Firefox")
        assert "transpose-all-axes" in _text(m, "report-body")
        assert (tmp_path / "ws" / "step1_scores.py").read_text() == WRONG

        # the heatmap's rows and the worked example's sliders respond
        _wait(m, lambda mm: mm.execute_script(
            "return document.querySelectorAll('#heatmap .row-button').length") > 0, "no heatmap")
        m.execute_script("document.querySelector('#heatmap .row-button[data-token=\"animal\"]').click()")
        _wait(m, lambda mm: mm.execute_script(
            "return document.getElementById('heatmap-bars').dataset.row") == "animal", "row not chosen")
        _wait(m, lambda mm: "[5.679, 1.546]" in _text(mm, "example-stages"), "no worked example")
        m.execute_script("const s = document.getElementById('q1'); s.value = '0.5';"
                         "s.dispatchEvent(new Event('input', {bubbles: true}));")
        _wait(m, lambda mm: "[5.679, 1.546]" not in _text(mm, "example-stages"),
              "the worked example did not recompute")
        shots = Path(os.environ.get("ATTN_PRACTICE_SCREENSHOTS") or tmp_path / "screenshots")
        shots.mkdir(parents=True, exist_ok=True)
        (shots / "serve-firefox.png").write_bytes(m.screenshot(format="binary"))
    finally:
        served.stop()


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


def _check(m: object) -> None:
    """Click Check and wait for its report to be drawn."""
    before = int(m.execute_script("return document.body.dataset.reports || '0'"))
    m.execute_script("document.getElementById('check').click()")
    _wait(m, lambda mm: int(mm.execute_script("return document.body.dataset.reports || '0'")) > before,
          "no report came", timeout=120)


def test_labels_restart_and_reload_tell_the_truth_in_firefox(firefox, tmp_path: Path):
    """Issue 20 items 1-3 in Firefox: honest labels, a tab that reconnects, a kept report."""
    from conftest import correct_solutions, run

    m = firefox
    assert run(["start", "ws"], tmp_path).exit_code == 0
    ws = tmp_path / "ws"
    correct_solutions(ws)
    assert run(["check", "--all"], ws).exit_code in (0, 1)
    served = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    port = served.port
    try:
        m.navigate(f"{served.base}/step/step3?token={served.token}")
        _wait(m, lambda mm: mm.execute_script("return document.body.dataset.ready") == "true",
              "the page never became ready in Firefox")
        set_code = ("const t = document.getElementById('code'); t.value = arguments[0];"
                    "t.dispatchEvent(new Event('input', {bubbles: true}));")
        m.execute_script(set_code, script_args=[RAISES])
        _check(m)
        why = "the reference softmax (step 3), because your step 3 raises on this input"
        for widget in ("example", "heatmap", "scale"):
            _wait(m, lambda mm, w=widget: why in _text(mm, f"{w}-source"), f"{widget} label unchanged")
        m.execute_script(set_code, script_args=[NO_EXP])
        _check(m)
        _wait(m, lambda mm: "[7.333, 0.667] (yours)" in _text(mm, "example-stages"),
              "the learner's numbers are not shown")
        assert "[0.506, 0.186, 0.307] ← first departure" in _text(m, "example-stages")
        assert "Computed with your code: your steps 1, 2, 3, 4, 5." in _text(m, "example-source")
        # a reload keeps the last report
        m.refresh()
        _wait(m, lambda mm: mm.execute_script("return document.body.dataset.ready") == "true",
              "the page did not come back after a reload")
        assert "step3 failed" in _text(m, "report-body")
        # a restart with the tab open: it reconnects by itself
        served.stop()
        _wait(m, lambda mm: "Lost the connection" in _text(mm, "notice"), "the loss was not said")
        served = Served(["ws", "--port", str(port), "--no-open"], tmp_path)
        _wait(m, lambda mm: mm.execute_script("return document.body.dataset.connected") == "true",
              "the tab did not reconnect", timeout=60)
        assert m.execute_script("return document.body.dataset.refused") is None
    finally:
        served.stop()
