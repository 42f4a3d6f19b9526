"""The grade belongs to the learner who earned it: a student id is held by one learner per class.

Through the real console script on loopback (SQLite, and a real PostgreSQL
where one can run): a second claim of an id, in any spelling that means the
same id, is refused with a message to see the instructor, and signs nobody
in; twelve joins racing for one id make one learner; the instructor sees the
clash on their page's API and settles it either way; an export never holds
two learners under one id without naming both, and `report` keeps both.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import threading
from collections.abc import Iterator

import pytest
from test_host_support import HostProcess, console_script

httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow

#: one id, spelled as a learner might (case, spaces, an invisible character, full-width, a
#: look-alike Cyrillic letter, Arabic-Indic digits, combining accents)
SAME_ID = ["S123", "s123", " S 123 ", "S\u200b123", "\uff33\uff11\uff12\uff13", "\u0405123",
           "S\u0661\u0662\u0663", "S1\u03002\u03013"]


@pytest.fixture(params=["sqlite", "postgres"])
def host(request, tmp_path) -> Iterator[HostProcess]:
    with contextlib.ExitStack() as stack:
        args = ["--ask-student-id"]
        if request.param == "postgres":
            pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
            from pg_cluster import cluster_or_skip

            pg = stack.enter_context(cluster_or_skip())
            args += ["--db", pg.create_database("claims")]
        h = HostProcess(tmp_path / "class", *args)
        try:
            yield h
        finally:
            h.stop()


def join(h: HostProcess, name: str, student_id: str) -> tuple[httpx.Client, httpx.Response]:
    c = h.client()
    page = c.get(f"/join/{h.join_code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    return c, c.post(f"/join/{h.join_code}", data={"csrf": csrf, "display_name": name,
                                                   "student_id": student_id})


def teacher(h: HostProcess) -> tuple[httpx.Client, str]:
    t = h.client()
    assert t.get(f"/teach?key={h.key}").status_code == 303
    token = re.search(r'name="attnp-token" content="([^"]+)"', t.get("/teach").text).group(1)
    return t, token


def clashes(t: httpx.Client) -> list[dict]:
    return t.get("/teach/api/class").json()["id_conflicts"]


def test_a_second_claim_is_refused_and_the_instructor_settles_it(host):
    _, ada = join(host, "Ada", "S123")
    assert ada.status_code == 200 and 'id="resume-link"' in ada.text
    for spelling in SAME_ID:
        c, r = join(host, "Mallory", spelling)
        assert r.status_code == 409, (spelling, r.text)
        assert "already taken" in r.text and "instructor" in r.text
        assert "Ada" not in r.text and 'id="resume-link"' not in r.text  # no name given away, no account
        assert 'name="attnp-token"' not in c.get("/").text  # signed in as nobody
    for invisible in ["\u200b", " \u2060 "]:  # an id of nothing is no id at all
        assert join(host, "Nobody", invisible)[1].status_code == 400
    t, token = teacher(host)
    picture = t.get("/teach/api/class").json()
    assert picture["learners"] == 1 or len(picture["grid"]) == 1
    refused = [c for c in picture["id_conflicts"] if c["kind"] == "refused"]
    assert len(refused) == len(set(SAME_ID))  # each spelling once; the same claim twice is one clash
    assert {c["claimant"] for c in refused} == {"Mallory"}
    assert {c["holder"]["name"] for c in refused} == {"Ada"}
    post = {"headers": {"X-Attn-Token": token}}
    for c in refused:  # Ada keeps it
        assert t.post("/teach/api/settle-id", json={"conflict": c["conflict"], "give_to": "holder"},
                      **post).status_code == 200
    assert clashes(t) == []
    assert t.post("/teach/api/settle-id", json={"conflict": refused[0]["conflict"], "give_to": "holder"},
                  **post).status_code == 404  # settled once
    assert t.post("/teach/api/settle-id", json={"conflict": "x", "give_to": "nobody"},
                  **post).status_code == 400
    assert t.post("/teach/api/settle-id", json={"conflict": "x", "give_to": "holder"}).status_code == 403

    # Bob is the real S123 (Ada mistyped hers): the id goes to him, Ada keeps her work
    assert join(host, "Bob", "S123")[1].status_code == 409
    (clash,) = clashes(t)
    assert t.post("/teach/api/settle-id", json={"conflict": clash["conflict"], "give_to": "claimant"},
                  **post).status_code == 200
    assert join(host, "Bob", "S123")[1].status_code == 200
    people = {row["name"]: row for row in t.get("/teach/api/class").json()["grid"]}
    assert people["Ada"].get("student_id", "") == "" and people["Bob"]["student_id"] == "S123"
    ada_id = people["Ada"]["learner"]
    taken = t.post("/teach/api/student-id", json={"learner": ada_id, "student_id": "s 123"}, **post)
    assert taken.status_code == 409 and "another learner" in taken.json()["error"]
    assert t.post("/teach/api/student-id", json={"learner": ada_id, "student_id": "S124"},
                  **post).status_code == 200
    exported = json.loads(t.get("/teach/export.json").text)
    assert sorted(r["submission"] for r in exported) == ["S123", "S124"]


def test_joins_racing_for_one_id_make_one_learner(host):
    results: list[int] = []
    start = threading.Barrier(12)

    def go(i: int) -> None:
        c = host.client()
        page = c.get(f"/join/{host.join_code}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        start.wait(timeout=60)
        r = c.post(f"/join/{host.join_code}", data={"csrf": csrf, "display_name": f"Racer {i}",
                                                    "student_id": SAME_ID[i % len(SAME_ID)]})
        results.append(r.status_code)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(12)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert sorted(results) == [200] + [409] * 11, results
    t, _ = teacher(host)
    assert len(t.get("/teach/api/class").json()["grid"]) == 1


def test_an_export_names_both_learners_under_one_old_id_and_report_keeps_both(tmp_path):
    """Learners from before the rule may share an id (the store kept no key for them)."""
    data = tmp_path / "class"
    h = HostProcess(data, "--ask-student-id")
    try:
        join(h, "Ada", "S7")
        join(h, "Eve", "S8")
    finally:
        h.stop()
    with sqlite3.connect(data / "class.sqlite3") as db:  # as a class from before the rule left it
        db.execute("UPDATE learners SET student_id = 's7', id_key = NULL WHERE display_name = 'Eve'")
    out = tmp_path / "class.json"
    run = subprocess.run([console_script(), "host", "export", str(data), "--format", "json",
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    labels = sorted(r["submission"] for r in json.loads(out.read_text()))
    assert len(set(labels)) == 2 and all("Ada" in x or "Eve" in x for x in labels), labels
    assert all(x.lower().startswith("s7") for x in labels)
    csv = subprocess.run([console_script(), "host", "export", str(data), "--format", "csv"],
                         capture_output=True, text=True, timeout=300)
    assert csv.returncode == 0 and "Ada" in csv.stdout and "Eve" in csv.stdout
    report = subprocess.run([console_script(), "report", str(out), "--format", "json"],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["headline"]["submissions"] == 2
    # an export from before this rule, both records under one label: report keeps both, and says so
    merged = json.loads(out.read_text())
    for record in merged:
        record["submission"] = "S7"
    old_export = tmp_path / "old-export.json"
    old_export.write_text(json.dumps(merged))
    report = subprocess.run([console_script(), "report", str(old_export), "--format", "json"],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert sorted(s["submission"] for s in json.loads(report.stdout)["submissions"]) == ["S7", "S7 (2)"]
    assert "two learners under one id" in report.stderr
    h = HostProcess(data)
    try:
        t, token = teacher(h)
        (shared,) = clashes(t)
        assert shared["kind"] == "shared" and {x["name"] for x in shared["learners"]} == {"Ada", "Eve"}
        eve = next(x for x in shared["learners"] if x["name"] == "Eve")
        assert t.post("/teach/api/student-id", json={"learner": eve["learner"], "student_id": ""},
                      headers={"X-Attn-Token": token}).status_code == 200
        assert clashes(t) == []
    finally:
        h.stop()


def test_the_instructor_page_shows_the_clash_and_settles_it(tmp_path):
    from browser import browser

    h = HostProcess(tmp_path / "class", "--ask-student-id")
    try:
        join(h, "Ada", "S55")
        assert join(h, "Bea", "s55")[1].status_code == 409
        with browser(1280, 900) as b:
            b.get(f"{h.base}/teach?key={h.key}")
            b.wait_for(lambda d: "Bea tried to join with student id s55, held by Ada" in
                       d.find_element("id", "id-conflicts").text, message="no clash on the page")
            button = next(x for x in b.find_elements("css selector", "#id-conflicts button")
                          if x.text == "Give it to Bea")
            button.click()
            b.wait_for(lambda d: "No student-id clashes" in d.find_element("id", "id-conflicts").text,
                       message="the clash stayed after settling it")
            assert "ask Bea to join again" in b.find_element("id", "ids-status").text
            assert join(h, "Bea", "s55")[1].status_code == 200
            # the holder gets their right id from the same panel
            from selenium.webdriver.support.ui import Select

            b.wait_for(lambda d: len(d.find_elements("css selector", "#set-id-learner option")) == 2,
                       message="the learner list never showed both")
            Select(b.find_element("id", "set-id-learner")).select_by_visible_text("Ada")
            b.find_element("id", "set-id-value").send_keys("S56")
            b.find_element("css selector", "#set-student-id button").click()
            b.wait_for(lambda d: d.find_element("id", "ids-status").text == "Student id set.",
                       message="setting the id failed")
        t, _ = teacher(h)
        ids = {r["name"]: r["student_id"] for r in t.get("/teach/api/class").json()["grid"]}
        assert ids == {"Ada": "S56", "Bea": "s55"}
    finally:
        h.stop()
