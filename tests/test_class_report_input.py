"""`attn-practice report` on input that is not a clean class: refused clearly, or read tolerantly."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_class_report import SECTIONS, invoke, parse, raw_reports

from attn_practice.grader.staff.class_report import aggregate, load_members


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reports() -> list[dict[str, Any]]:
    return raw_reports(SECTIONS)


@pytest.mark.parametrize("content, words", [
    ({"foo": 1}, 'no "schema"'),
    ({"score": 1, "tests": [], "output": ""}, 'no "schema"'),  # a Gradescope results.json
    ({"schema": "attn-practice.class/1", "headline": {}}, '"attn-practice.class/1"'),
    ("step,id\n1,2\n", "not valid JSON"),
    ([{"schema": "attn-practice.grade/1", "submission": "a", "steps": []}, 3], "item 2"),
    ({"schema": "attn-practice.grade/1", "submission": "a", "steps": [{"status": "passed"}]},
     '"steps"'),
    ({"schema": "attn-practice.grade/1", "steps": []}, '"submission"'),
])
def test_a_file_that_is_not_a_grade_report_is_refused_by_name(tmp_path: Path, content: Any,
                                                             words: str) -> None:
    good = tmp_path / "good.json"
    good.write_text(SECTIONS[0].read_text(encoding="utf-8"), encoding="utf-8")
    bad = write(tmp_path / "odd-file.json", content)
    out = tmp_path / "class.html"
    res = invoke("report", str(good), str(bad), "--out", str(out))
    assert res.exit_code == 2
    assert "odd-file.json" in res.stderr and "is not a grade report" in res.stderr
    assert words in res.stderr and "grade --format json" in res.stderr
    assert "Traceback" not in res.output + res.stderr
    assert not out.exists()  # nothing half-written


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "binary.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    res = invoke("report", str(bad))
    assert res.exit_code == 2 and "binary.json is not a grade report" in res.stderr


def test_an_empty_class_is_refused(tmp_path: Path) -> None:
    res = invoke("report", str(write(tmp_path / "empty.json", [])), "--out", str(tmp_path / "c.html"))
    assert res.exit_code == 2
    assert "empty.json holds no grade reports" in res.stderr
    assert not (tmp_path / "c.html").exists()


def test_aggregates_of_nothing_are_zeros_not_a_crash() -> None:
    agg = aggregate([])
    assert agg["headline"]["submissions"] == 0 and agg["headline"]["median_score"] is None
    assert agg["score_histogram"] == [] and agg["diagnoses"] == []


def test_reports_from_different_courses_are_refused(tmp_path: Path, reports: list[dict]) -> None:
    other = copy.deepcopy(reports[:2])
    for r in other:  # a course that also counts step6, two points each
        r["submission"] = "other-" + r["submission"]
        r["steps"].append({**copy.deepcopy(r["steps"][0]), "id": "step6", "bonus": True,
                           "counted": True})
        for s in r["steps"]:
            s["max_score"] = 2.0
        r["max_score"] = 12.0
    res = invoke("report", str(SECTIONS[0]), str(write(tmp_path / "course-b.json", other)))
    assert res.exit_code == 2
    err = " ".join(res.stderr.split())
    assert "different courses" in err and "course-b.json" in err and "section-a.json" in err
    assert "step6 (2 pt)" in err and "Report each course on its own" in err


def test_course_fingerprints_tell_courses_apart(tmp_path: Path, reports: list[dict]) -> None:
    a, b = copy.deepcopy(reports[0]), copy.deepcopy(reports[1])
    a["course_fingerprint"], b["course_fingerprint"] = "abc123", "def456"
    res = invoke("report", str(write(tmp_path / "a.json", a)), str(write(tmp_path / "b.json", b)))
    assert res.exit_code == 2 and "course abc123" in res.stderr and "course def456" in res.stderr
    b["course_fingerprint"] = "abc123"
    res = invoke("report", str(write(tmp_path / "a.json", a)), str(write(tmp_path / "b.json", b)),
                 "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["course"] == "course abc123"


def test_an_uncounted_bonus_step_is_the_same_course(tmp_path: Path, reports: list[dict]) -> None:
    """Under the default course a present bonus file is graded but counts for nothing (§4.1)."""
    with_bonus = copy.deepcopy(reports[0])  # alice, who also did step6
    step6 = {**copy.deepcopy(with_bonus["steps"][0]), "id": "step6", "title": "Masked",
             "bonus": True, "counted": False}
    with_bonus["steps"].append(step6)
    old_style = copy.deepcopy(reports[1])  # bob, from a grader that wrote only "bonus": true
    old_style["steps"].append({**copy.deepcopy(step6), "status": "failed", "score": 0.0})
    del old_style["steps"][-1]["counted"]
    rest = write(tmp_path / "rest.json", reports[2:])
    res = invoke("report", str(write(tmp_path / "x.json", [with_bonus, old_style])), str(rest),
                 "--format", "json")
    assert res.exit_code == 0, res.stderr
    agg = json.loads(res.stdout)
    step6 = next(s for s in agg["steps"] if s["id"] == "step6")
    assert (step6["bonus"], step6["graded"], step6["passed"]) == (True, 2, 1)
    assert agg["headline"]["completed_core"] == 1  # alice; a bonus step is not core
    assert agg["headline"]["max_score"] == 5.0


def test_a_submission_given_twice_counts_once(tmp_path: Path) -> None:
    res = invoke("report", str(SECTIONS[0]), str(SECTIONS[0]), str(SECTIONS[1]), "--format", "json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["headline"]["submissions"] == 8
    # one line for all the repeats, with their count (not one line per repeated report)
    lines = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "4 submissions appear more than once (4 repeated reports" in res.stderr


def test_reports_are_read_tolerantly(tmp_path: Path, reports: list[dict]) -> None:
    """Newer graders may add keys, failure kinds and statuses; older ones omit fields."""
    r = copy.deepcopy(reports[1])  # bob
    r["new_top_level"] = {"x": 1}
    step = r["steps"][0]
    step["future_field"] = [1, 2]
    failing = next(t for t in step["tests"] if t.get("failure"))
    failing["failure"]["kind"] = "some-new-kind"
    failing["failure"]["severity"] = "high"
    step["diagnosis_details"][0]["confidence"] = 0.9
    r["steps"][1]["status"] = "quarantined"
    bare = {"schema": "attn-practice.grade/1", "submission": "bare",
            "steps": [{"id": "step1", "status": "failed", "diagnoses": ["no-scale"]}]}
    members, _ = load_members([write(tmp_path / "r.json", [r])])
    assert members[0].report.steps[1].status.value == "error"
    members_bare, _ = load_members([write(tmp_path / "bare.json", bare)])
    agg = aggregate(members_bare)
    d = agg["diagnoses"][0]
    from attn_practice.reference.mistakes import MISTAKES

    assert d["title"] == MISTAKES["no-scale"].title  # words filled from the catalogue


def test_a_submission_that_could_not_be_graded(tmp_path: Path, reports: list[dict]) -> None:
    broken = {"schema": "attn-practice.grade/1", "submission": "zed", "score": 0, "max_score": 5,
              "error": "the submission folder could not be read", "steps": []}
    res = invoke("report", str(SECTIONS[0]), str(write(tmp_path / "z.json", broken)),
                 "--format", "json")
    assert res.exit_code == 0, res.stderr
    h = json.loads(res.stdout)["headline"]
    assert (h["submissions"], h["not_graded"]) == (5, 1)


@pytest.mark.slow
def test_a_5000_submission_class_stays_small(tmp_path: Path, reports: list[dict]) -> None:
    big = []
    for i in range(5000):
        r = copy.deepcopy(reports[i % len(reports)])
        r["submission"] = f"student-{i:04d}-{r['submission']}"
        big.append(r)
    src = write(tmp_path / "big.json", big)
    out = tmp_path / "class.html"
    res = invoke("report", str(src), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    size = out.stat().st_size
    assert size < 5_000_000, f"{size} bytes"
    page = out.read_text(encoding="utf-8")
    doc = parse(page).root
    assert doc.find("div", data_key="submissions").cls("v").text() == "5000"
    # long lists fold: every submission is still in the page, the later ones inside <details>
    assert page.count('class="sub"') == 5000
    unstable = next(tr for tr in doc.iter("tr", data_id="softmax-unstable", data_step="step3"))
    assert unstable.cls("count").text() == str(2 * 625)


HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def test_hostile_strings_anywhere_in_a_report_stay_text(tmp_path: Path, reports: list[dict]) -> None:
    """A crafted JSON file: every string the page shows carries markup; none becomes markup."""
    r = copy.deepcopy(reports[2])  # carol: diagnosed and undiagnosed failures
    r["submission"] = "s" + HOSTILE
    for s in r["steps"]:
        s["title"] = HOSTILE
        s["diagnoses"] = [d + HOSTILE for d in s["diagnoses"]]
        s["diagnosis_details"] = [{**d, "id": d["id"] + HOSTILE, "title": HOSTILE,
                                   "explanation": "`" + HOSTILE + "`", "nudge": "*" + HOSTILE + "*"}
                                  for d in s["diagnosis_details"]]
        for t in s["tests"]:
            t["name"] = t["name"] + HOSTILE
            if t.get("failure"):
                t["failure"]["summary"] = HOSTILE
                t["failure"]["kind"] = "k" + HOSTILE
    r["steps"][3]["diagnoses"], r["steps"][3]["diagnosis_details"] = [], []
    r["steps"][3]["status"] = "failed"
    out = tmp_path / "c.html"
    res = invoke("report", str(write(tmp_path / "h.json", [r])), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    tree = parse(out.read_text(encoding="utf-8"))
    assert len(tree.scripts) == 1 and "alert" not in tree.scripts[0]
    assert list(tree.root.iter("img")) == []
    assert not any(k.startswith("on") for n in tree.root.iter() for k in n.attrs)
    assert HOSTILE in tree.root.text()
    from attn_practice.grader.reports.html_learner import render_learner

    member, _ = load_members([tmp_path / "h.json"])
    learner = parse(render_learner(member[0].report))
    assert learner.scripts == [] and list(learner.root.iter("img")) == []
    assert HOSTILE in learner.root.text()


def test_histogram_bins() -> None:
    from attn_practice.grader.staff.class_report import histogram

    whole = histogram([0, 5, 5, 3], 5)
    assert [(b["low"], b["high"], b["count"]) for b in whole] == [
        (0, 0, 1), (1, 1, 0), (2, 2, 0), (3, 3, 1), (4, 4, 0), (5, 5, 2)]
    frac = histogram([0.0, 2.5, 7.25, 7.5, 7.5], 7.5)  # a course with half points
    assert len(frac) == 10 and sum(b["count"] for b in frac) == 5
    assert frac[-1]["count"] == 3 and frac[-1]["high"] == 7.5  # the top score is in the last bin
    assert frac[0]["count"] == 1 and frac[3]["count"] == 1
