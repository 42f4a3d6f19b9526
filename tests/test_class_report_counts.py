"""The class report's headline against a hand count (issue 19.4), through the console script.

A course counting steps 1-5 (1 point each) and the bonus step 6 (3 points);
297 submissions in five groups whose numbers are worked out by hand below.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attn_practice.grader.results import GradeReport, Status, StepResult

EXE = Path(sys.executable).parent / "attn-practice"
POINTS = {"step1": 1.0, "step2": 1.0, "step3": 1.0, "step4": 1.0, "step5": 1.0, "step6": 3.0}


def _report(name: str, statuses: dict[str, Status], warnings: list[str] = ()) -> dict:
    steps = tuple(StepResult(id=sid, title=sid, status=statuses[sid],
                             score=POINTS[sid] if statuses[sid] is Status.PASSED else 0.0,
                             max_score=POINTS[sid], bonus=sid == "step6", counted=True,
                             error="no step file; found: notes.txt" if statuses[sid] is Status.MISSING else "")
                  for sid in POINTS)
    return GradeReport(submission=name, steps=steps, warnings=list(warnings)).to_dict()


def _all(status: Status, **override: Status) -> dict[str, Status]:
    return {sid: override.get(sid, status) for sid in POINTS}


P, F, M = Status.PASSED, Status.FAILED, Status.MISSING
#: (how many, statuses, warnings, score each)
GROUPS = [
    (83, _all(P), [], 8.0),                                  # everything: core and counted
    (39, _all(P, step6=F), ["step2: graded Step2_Scale.py as step2_scale.py"], 5.0),  # core only
    (130, _all(F, step1=P), [], 1.0),                        # step 1 only
    (35, _all(F), [], 0.0),                                  # nothing passes
    (10, _all(M), ["nothing recognised: no step file; found: notes.txt"], 0.0),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reports = [_report(f"s{g}_{i:03d}", statuses, warnings)
               for g, (n, statuses, warnings, _) in enumerate(GROUPS) for i in range(n)]
    path = tmp_path_factory.mktemp("class") / "results.json"
    path.write_text(json.dumps(reports))
    return path


def _report_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXE), "report", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=300)


def test_headline_equals_the_hand_count(results):
    res = _report_cmd(str(results), "--format", "json")
    assert res.returncode == 0, res.stderr
    agg = json.loads(res.stdout)
    h = agg["headline"]
    assert h["submissions"] == 297
    assert h["completed_core"] == 83 + 39 == 122  # steps 1-5, whatever step 6 did
    assert h["completed_counted"] == 83  # every counted step, step 6 included
    assert h["graded_with_warnings"] == 39 + 10
    assert h["nothing_recognised"] == 10 and h["not_graded"] == 10
    assert h["mean_score"] == round((83 * 8 + 39 * 5 + 130 * 1) / 297, 2) == 3.33
    assert h["median_score"] == 1.0
    step1 = next(s for s in agg["steps"] if s["id"] == "step1")
    assert (step1["passed"], step1["graded"]) == (252, 297)
    step6 = next(s for s in agg["steps"] if s["id"] == "step6")
    assert step6["bonus"] is False  # the course counts it


def test_the_page_rounds_once_shows_the_glyph_and_never_calls_a_counted_step_bonus(results, tmp_path):
    out = tmp_path / "class.html"
    res = _report_cmd(str(results), "--out", str(out))
    assert res.returncode == 0, res.stderr
    page = out.read_text(encoding="utf-8")
    assert re.search(r'<tr data-step="step1">.*?<td class="n rate">84\.8%</td>', page)  # 252/297, not 84.9
    assert "\u25b8" in page and "\x15" not in page and '"\x15B8' not in page
    assert "(bonus" not in page
    cards = dict(re.findall(r'data-key="(\w+)">[^<]*<b class="v">([^<]*)</b>', page))
    assert cards["completed_core"] == "122" and cards["completed_counted"] == "83"
    assert cards["graded_with_warnings"] == "49" and cards["nothing_recognised"] == "10"
    assert cards["mean_score"] == "3.33"
    assert "graded Step2_Scale.py as step2_scale.py" in page  # in the submission's row


def test_lowest_score_first_and_repeats_in_one_line(results):
    res = _report_cmd(str(results), str(results), "--format", "json", "--sort", "score")
    assert res.returncode == 0, res.stderr
    agg = json.loads(res.stdout)
    scores = [s["score"] for s in agg["submissions"]]
    assert scores == sorted(scores) and scores[0] == 0.0 and agg["headline"]["submissions"] == 297
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "297 submissions appear more than once (297 repeated reports" in res.stderr
