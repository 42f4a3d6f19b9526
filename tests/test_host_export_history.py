"""The session's mistakes are kept (CONTRACT §7.1): `host export --format json` gives each
learner a `history` of every check; `report` on it adds `diagnoses_met` (JSON) and a section
(HTML) with the mistakes met and fixed; the CSV has a student_id column when the class asks
for ids; `report FILE` without --out writes the page to a file and says where.

The installed console script on a class served by it on loopback, as an instructor runs them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess

import pytest
from test_host_support import HostProcess, console_script, implementation

pytestmark = pytest.mark.slow

WRONG = implementation("step2", "wrong_scale_by_dk")
RIGHT = implementation("step2", "correct_np_sqrt")


def run(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def join_with_id(h: HostProcess, name: str, student_id: str):
    c = h.client()
    page = c.get(f"/join/{h.join_code}")
    assert 'name="student_id"' in page.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = c.post(f"/join/{h.join_code}", data={"csrf": csrf, "display_name": name, "student_id": student_id})
    assert r.status_code == 200, r.text
    token = re.search(r'name="attnp-token" content="([^"]+)"', c.get("/").text).group(1)
    return c, {"X-Attn-Token": token}


def check(c, headers, step: str, content: str) -> dict:
    assert c.post(f"/api/step/{step}/save", json={"content": content, "base": None},
                  headers=headers).status_code == 200
    r = c.post(f"/api/step/{step}/check", json={}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """A lab: Ann makes the scale-by-dk mistake and fixes it; Ben makes it and keeps it; Cy
    passes at once. The course asks for student ids."""
    root = tmp_path_factory.mktemp("lab")
    course = root / "course.yaml"
    course.write_text("steps: [step1, step2, step3, step4, step5]\nstudent_id: true\n", encoding="utf-8")
    h = HostProcess(root / "class", "--course", str(course))
    try:
        ann, ann_h = join_with_id(h, "Ann", "s001")
        ben, ben_h = join_with_id(h, "Ben", "s002")
        cy, cy_h = join_with_id(h, "Cy", "s003")
        assert "scale-by-dk" in check(ann, ann_h, "step2", WRONG)["diagnoses"]
        assert check(ann, ann_h, "step2", RIGHT)["status"] == "passed"
        assert "scale-by-dk" in check(ben, ben_h, "step2", WRONG)["diagnoses"]
        assert check(cy, cy_h, "step2", RIGHT)["status"] == "passed"
    finally:
        h.stop()
    out = root / "class.json"
    r = run("host", "export", str(root / "class"), "--format", "json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return root, out


def test_the_export_holds_every_check_of_the_session(session):
    _, out = session
    records = {r["submission"]: r for r in json.loads(out.read_text())}
    assert set(records) == {"s001", "s002", "s003"}
    ann = records["s001"]["history"]
    assert [(e["step"], e["status"], e["diagnoses"]) for e in ann] == [
        ("step2", "failed", ["scale-by-dk"]), ("step2", "passed", [])]
    assert all(set(e) == {"step", "at", "status", "diagnoses"} for e in ann)
    assert ann[0]["at"] <= ann[1]["at"] and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", ann[0]["at"])
    assert [e["status"] for e in records["s002"]["history"]] == ["failed"]
    # the latest reports are as before: Ann's step2 passes now
    assert {s["id"]: s["status"] for s in records["s001"]["steps"]}["step2"] == "passed"


def test_report_names_the_mistakes_met_fixed_or_not(session, tmp_path):
    _, out = session
    r = run("report", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    agg = json.loads(r.stdout)
    met = agg["diagnoses_met"]["scale-by-dk"]
    assert met["count"] == 2 and sorted(met["submissions"]) == ["s001", "s002"]
    assert met["fixed"] == ["s001"] and met["still_open"] == ["s002"]
    # still open at the end: only Ben, as before
    open_now = {d["id"]: d["submissions"] for d in agg["diagnoses"]}
    assert open_now == {"scale-by-dk": ["s002"]}

    r = run("report", str(out), "--out", str(tmp_path / "class.html"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "class.html").read_text()
    section = page.split('id="diagnoses-met"', 1)[1].split("</section>", 1)[0]
    assert "Mistakes met during the session" in section and "scale-by-dk" in section
    assert "s001" in section and "s002" in section
    assert 'class="n count">2<' in section and 'class="n fixed">1<' in section


def test_a_plain_grade_report_has_no_session_section(tmp_path):
    from test_class_report import SECTIONS

    r = run("report", str(SECTIONS[0]), "--format", "json")
    assert r.returncode == 0 and "diagnoses_met" not in json.loads(r.stdout)


def test_the_csv_has_the_student_ids_the_class_asked_for(session):
    root, _ = session
    r = run("host", "export", str(root / "class"), "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert list(rows[0])[:3] == ["submission", "student_id", "name"]
    assert {(x["student_id"], x["name"]) for x in rows} == {("s001", "Ann"), ("s002", "Ben"), ("s003", "Cy")}
    assert {x["student_id"]: x["step2"] for x in rows} == {"s001": "1", "s002": "0", "s003": "1"}


def test_report_without_out_writes_a_file_and_says_where(session, tmp_path):
    _, out = session
    r = run("report", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = tmp_path / "class.html"
    assert page.exists() and page.read_text().startswith("<!DOCTYPE html>")
    assert "<html" not in r.stdout and "<!DOCTYPE" not in r.stdout
    assert str(page) in "".join(r.stderr.split())  # a long path is wrapped inside
    r = run("report", str(out), "--format", "json", cwd=tmp_path)  # JSON still prints
    assert r.returncode == 0 and "diagnoses_met" in json.loads(r.stdout)
