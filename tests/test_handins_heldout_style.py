"""A second LMS-style class (tests/handins_lms_class2.py), graded in ONE call through the console script.

Checked as the issue is: every core step as a fair teacher grades it (the
grades were written down before the grader ran), every student in every
report format, the warning that explains each choice naming its file, and
every "Reproduce it" snippet on the terminal run the way a learner would (in
the student's folder, after unzipping, or in the notebook after its cells).
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from handins_lms_class2 import EXPECTED, build, grade, unrunnable_reproduce_lines

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("lms2")
    build(root)
    out: dict[str, object] = {"root": root}
    for fmt in ("json", "rich", "csv", "junit"):
        proc = grade(root, "dl", "--format", fmt)
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        out[fmt] = proc.stdout
        out[fmt + "_err"] = proc.stderr
    return out


def _label(submission: str) -> str:
    return submission.split("/", 1)[1]


def test_every_core_step_as_a_fair_teacher_grades_it(graded: dict[str, object]) -> None:
    rows = {_label(r["submission"]): r for r in json.loads(str(graded["json"]))}
    misses = []
    for label, (score, statuses, _) in EXPECTED.items():
        row = rows.get(label)
        if row is None:
            misses.append(f"{label}: no row")
            continue
        got = tuple(s["status"] for s in row["steps"] if not s.get("bonus"))[:5]
        if row["score"] != score or got != statuses:
            misses.append(f"{label}: expected {score} {statuses}, got {row['score']} {got}")
    assert not misses, "\n".join(misses)
    assert set(rows) == set(EXPECTED), "a row for no student (or one missing)"


def test_every_student_in_every_report(graded: dict[str, object]) -> None:
    n = len(EXPECTED)
    assert f"graded {n} submissions, each on its own row" in str(graded["json_err"])
    rows = list(csv.DictReader(io.StringIO(str(graded["csv"]))))
    assert len(rows) == n
    suites = ET.fromstring(str(graded["junit"])).iter("testsuite")
    assert len({s.get("name") for s in suites}) >= n
    for label in EXPECTED:
        assert label in str(graded["rich"]), label


def test_every_choice_is_a_warning_naming_its_file(graded: dict[str, object]) -> None:
    rows = {_label(r["submission"]): r for r in json.loads(str(graded["json"]))}
    for label, (_, _, phrase) in EXPECTED.items():
        if phrase:
            assert any(phrase in w for w in rows[label]["warnings"]), (label, rows[label]["warnings"])
    # nothing recognised, refused, empty: the message names the file
    assert "report.pdf" in rows["jonas"]["steps"][0]["error"]
    assert "step4_weighted_sum.py (empty)" in rows["ines"]["steps"][3]["error"]
    for hostile in ("oscar.zip", "pia.zip", "quinn.zip"):
        assert any(w.startswith(f"{hostile} is refused") for w in rows[hostile]["warnings"]), rows[hostile]


def test_every_reproduce_line_runs_where_the_students_code_is(graded: dict[str, object], tmp_path: Path) -> None:
    report = str(graded["rich"])
    assert report.count("Reproduce it") >= 12, report[-4000:]
    bad = unrunnable_reproduce_lines(report, Path(str(graded["root"])), tmp_path)
    assert not bad, "\n".join(bad)
    assert "unzip" in report and "then unzip zhou_steps.zip inside it" in report
    assert "get_ipython().run_cell" in report  # the notebook export that plain Python cannot import
