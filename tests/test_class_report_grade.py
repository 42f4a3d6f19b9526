"""`grade --format html` end to end on real submissions, and both pages in a real browser.

Grading runs through the installed console script, as a course's CI would
run it. The browser is Debian's headless Chromium driven by Selenium; where
none can start, those tests skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from class_fixture import HEIDI, SCRIPT_MESSAGE, build_class
from test_class_report import SECTIONS, invoke, parse

from attn_practice.reference.mistakes import MISTAKES

EXE = Path(sys.executable).with_name("attn-practice")
SUBMISSIONS = Path(__file__).parent / "submissions"
#: Set to a folder to keep the browser screenshots (the README's comes from here).
SHOTS_ENV = "ATTN_PRACTICE_SCREENSHOTS"


def grade(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ATTN_PRACTICE_SECRET": "class-report-tests", "NO_COLOR": "1"}
    env.pop("ATTN_PRACTICE_DEBUG", None)
    return subprocess.run([str(EXE), "grade", *args, "--cache-dir", str(cwd / ".cache")], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Four real learners graded twice: once to a class page, once to JSON (from the cache)."""
    root = tmp_path_factory.mktemp("class")
    names = ["alice", "bob", "frank", HEIDI]
    build_class(root, names)
    html = grade([*names, "--format", "html", "--out", "class.html"], root)
    js = grade([*names, "--format", "json", "--out", "results.json"], root)
    return {"root": root, "names": names, "html": html, "json": js}


@pytest.mark.slow
def test_grade_html_writes_the_class_page(graded_class: dict[str, Any]) -> None:
    root = graded_class["root"]
    res = graded_class["html"]
    assert res.returncode == 1, res.stderr  # some steps failed, as with every other format
    assert "Traceback" not in res.stderr
    page = (root / "class.html").read_text(encoding="utf-8")
    doc = parse(page).root
    rows = {(tr.attrs["data-step"], tr.attrs["data-id"]): [li.text() for li in tr.iter("li")]
            for tr in doc.find(id="misconceptions").iter("tr") if tr.attrs.get("data-id")}
    assert rows == {("step1", "transpose-all-axes"): ["bob"], ("step5", "transpose-all-axes"): ["bob"]}
    assert SCRIPT_MESSAGE not in page and "<b>heidi</b>" not in page
    assert doc.find("div", data_key="submissions").cls("v").text() == "4"


@pytest.mark.slow
def test_grade_html_and_report_of_grade_json_agree(graded_class: dict[str, Any]) -> None:
    root = graded_class["root"]
    assert graded_class["json"].returncode == 1
    res = invoke("report", str(root / "results.json"), "--out", str(root / "from-json.html"))
    assert res.exit_code == 0, res.stderr
    a = (root / "class.html").read_text(encoding="utf-8")
    b = (root / "from-json.html").read_text(encoding="utf-8")
    assert a == b  # the same numbers and words, whichever way the page was made
    agg = json.loads(invoke("report", str(root / "results.json"), "--format", "json").stdout)
    raw = json.loads((root / "results.json").read_text(encoding="utf-8"))
    for d in agg["diagnoses"]:
        assert d["submissions"] == [r["submission"] for r in raw
                                    if d["id"] in next(s for s in r["steps"]
                                                       if s["id"] == d["step"])["diagnoses"]]


@pytest.mark.slow
def test_one_submission_gets_the_learners_own_page(tmp_path: Path) -> None:
    build_class(tmp_path, ["bob"])
    res = grade(["bob", "--format", "html", "--out", "bob.html"], tmp_path)
    assert res.returncode == 1, res.stderr
    js = grade(["bob", "--format", "json"], tmp_path)
    report = json.loads(js.stdout)
    page = (tmp_path / "bob.html").read_text(encoding="utf-8")
    doc = parse(page).root
    text = " ".join(doc.text().split())
    m = MISTAKES["transpose-all-axes"]
    assert "Known mistake" in text and "transpose-all-axes" in text and m.title in text
    def plain(markdown: str) -> str:  # the catalogue marks `code` and *emphasis*; the page renders them
        return " ".join(markdown.replace("`", "").replace("*", "").split())

    assert plain(m.explanation) in text and "Try: " + plain(m.nudge) in text
    assert "<code>.T</code>" in page  # `.T` became code, not literal backticks
    step1 = doc.find("section", id="step1")
    names = [" ".join(li.text().split()) for li in step1.find("ul").iter("li")]
    tests = next(s for s in report["steps"] if s["id"] == "step1")["tests"]
    assert names == [("✓ " if t["status"] == "passed" else "✗ ") + " ".join(t["name"].split())
                     for t in tests]
    failure = next(t["failure"] for t in tests if t.get("failure"))
    assert " ".join(failure["summary"].split()) in text  # the smallest failing input, expected vs got
    assert "Reproduce it" in text and "from step1_scores import dot_scores" in text
    assert "What next" in text and "attn-practice check step1" in text
    assert doc.find("div", data_key="score").cls("v").text() == "3 / 5"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["attack_output_flood", "attack_fake_output"])
def test_learner_page_for_hostile_submissions(tmp_path: Path, case: str) -> None:
    sub = tmp_path / case
    shutil.copytree(SUBMISSIONS / case, sub, ignore=shutil.ignore_patterns("expected.yaml"))
    res = grade([case, "--format", "html", "--out", "page.html"], tmp_path)
    assert res.returncode == 1, res.stderr
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    parse(page)
    assert len(page) < 200_000  # printed floods are bounded
    assert page.count("<script") == 0  # the learner page needs no script at all


# ------------------------------------------------------------------ a real browser
def chromium(tmp_path: Path, *, javascript: bool = True) -> Any:
    """Headless Chromium through Selenium, or a skip that says what is missing."""
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed: pip install -e '.[test]'")
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not (os.path.exists(binary) and os.path.exists(driver)):
        pytest.skip("no Chromium here: install Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,1500", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    try:
        return webdriver.Chrome(service=Service(driver), options=options)
    except WebDriverException as exc:
        pytest.skip(f"Chromium cannot start here: {exc.msg}")


def keep_shot(browser: Any, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get(SHOTS_ENV):
        dest = Path(os.environ[SHOTS_ENV])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, dest / name)
    return shot


def severe(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


@pytest.mark.slow
def test_class_page_in_chromium(tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    assert invoke("report", *map(str, SECTIONS), "--out", str(out)).exit_code == 0
    browser = chromium(tmp_path)
    try:
        browser.get(out.as_uri())
        assert browser.title == "Class report: 8 submissions"
        assert severe(browser) == []
        keep_shot(browser, tmp_path, "class-report.png")
        # the filter box (shown only with JavaScript) narrows the rows to one mistake
        box = browser.find_element("id", "filter")
        assert box.is_displayed()
        box.send_keys("softmax-unstable")
        shown = [d.get_attribute("data-submission")
                 for d in browser.find_elements("css selector", "#submissions details.sub")
                 if d.is_displayed()]
        assert shown == ["carol", "dave"]
        # escaped text stays text: no element was made from a learner's message
        assert browser.find_elements("css selector", "#undiagnosed pre b") == []
        assert any(SCRIPT_MESSAGE.split(" & ")[0] in p.text
                   for p in browser.find_elements("css selector", "#undiagnosed pre"))
        # it prints: the print stylesheet applies and the folds open first
        import base64

        pdf = base64.b64decode(browser.print_page())
        assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
        assert severe(browser) == []
    finally:
        browser.quit()


@pytest.mark.slow
def test_class_page_works_without_javascript(tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    assert invoke("report", *map(str, SECTIONS), "--out", str(out)).exit_code == 0
    browser = chromium(tmp_path, javascript=False)
    try:
        browser.get(out.as_uri())
        assert not browser.find_element("id", "filter").is_displayed()
        row = browser.find_element("css selector", '#submissions details.sub[data-submission="bob"]')
        assert row.get_attribute("open") is None
        row.find_element("tag name", "summary").click()
        assert row.get_attribute("open") is not None
        assert "transpose-all-axes" in row.text
        assert severe(browser) == []
    finally:
        browser.quit()


@pytest.mark.slow
def test_learner_page_in_chromium(tmp_path: Path) -> None:
    from attn_practice.grader.reports.html_learner import render_learner
    from attn_practice.grader.staff.class_report import load_members

    members, _ = load_members(SECTIONS)
    carol = next(m.report for m in members if m.label == "carol")
    out = tmp_path / "carol.html"
    out.write_text(render_learner(carol), encoding="utf-8")
    browser = chromium(tmp_path)
    try:
        browser.get(out.as_uri())
        assert severe(browser) == []
        assert "softmax-unstable" in browser.find_element("id", "step3").text
        keep_shot(browser, tmp_path, "learner-report.png")
    finally:
        browser.quit()


def test_learner_page_for_a_full_pass_and_for_an_ungraded_submission() -> None:
    from attn_practice.grader.reports.html_learner import render_learner
    from attn_practice.grader.staff.class_report import load_members

    members, _ = load_members(SECTIONS)
    alice = next(m.report for m in members if m.label == "alice")
    text = " ".join(parse(render_learner(alice)).root.text().split())
    assert "Every graded step passed" in text and "Known mistake" not in text
    from attn_practice.grader.results import GradeReport

    broken = GradeReport(submission="zed", error="the folder could not be read <b>x</b>")
    doc = parse(render_learner(broken)).root
    assert "could not be graded: the folder could not be read <b>x</b>" in doc.text()
    assert list(doc.iter("b")) == []


@pytest.mark.parametrize("args", [["grade", str(SUBMISSIONS / "attack_nan"), "--format", "html"]])
def test_a_page_is_not_printed_on_a_terminal(tmp_path: Path, args: list[str]) -> None:
    """On a terminal `--out` is needed; `grade` says so before grading, not after (`report`
    writes its page to a file instead: tests/test_host_export_report.py)."""
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([str(EXE), *args], stdout=follower, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    assert "give --out FILE.html" in proc.stderr and "Traceback" not in proc.stderr
