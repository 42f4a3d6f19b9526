"""One pytest session per batch worker: collected once, and every report as a fresh session gives.

A batch engine (`staff.batch.batch_engine`) runs the hidden suites of its
second and later submissions on one collected `SuiteSession`; fixtures of
every scope are torn down after each submission. These tests grade the same
submissions — right, wrong in different steps, one that fails to import,
one with a bonus step — with a fresh pytest per submission and with the
reused session, in an order that switches steps on and off, and require
identical reports; and they check that the session really is reused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_grade import make_submission

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.course import default_course
from attn_practice.grader.engine.engine import Engine
from attn_practice.grader.results import without_timings
from attn_practice.grader.staff.batch import batch_engine, grade_with, options_for, step_ids_for


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("mixed")
    broken = make_submission(root / "syntax")
    (broken / "step2_scale.py").write_text("def scale_scores(scores, d_k:\n")
    bonus = make_submission(root / "bonus", steps=("step1_scores", "step2_scale", "step3_softmax",
                                                     "step4_weighted_sum", "step5_attention",
                                                     "step6_masked"))
    return [
        make_submission(root / "right"),
        make_submission(root / "wrong3", {3: "wrong_softmax_global"}),
        broken,
        bonus,
        make_submission(root / "wrong5", {5: "wrong_no_scale"}),
        make_submission(root / "right_again"),
        make_submission(root / "wrong1", {1: "wrong_scores_transposed"}),
    ]


def _grade_all(engine: Engine, subs: list[Path]) -> list[dict]:
    course = default_course()
    return [without_timings(grade_with(engine, s, step_ids_for(course, s), label=s.name).to_dict())
            for s in subs]


def test_a_reused_session_reports_exactly_what_a_fresh_pytest_does(mixed):
    options = options_for(default_course())
    with Engine(options) as fresh:
        expected = _grade_all(fresh, mixed)
        assert fresh.suites.session is None  # a plain engine never keeps a session
    with batch_engine(options) as reused:
        got = _grade_all(reused, mixed)
        session = reused.suites.session
        assert session is not None and session.open  # collected once, still open
        again = _grade_all(reused, list(reversed(mixed)))
        assert reused.suites.session is session  # the same session served every submission
        # ...and our hidden tests ran by their call phase alone (a course's private tests would not)
        assert session.call_only and session.call_only == {id(item) for item in session.items}
    assert got == expected
    assert list(reversed(again)) == expected
    # the right steps were graded: a bonus step in one, a syntax error in another
    by_name = {r["submission"]: r for r in got}
    assert [s["id"] for s in by_name["bonus"]["steps"]][-1] == "step6"
    assert by_name["syntax"]["steps"][1]["status"] != "passed"
    assert by_name["wrong3"]["steps"][2]["status"] == "failed"
    assert by_name["right_again"]["passed"] is True


def test_an_interrupted_session_is_dropped_and_the_next_submission_still_graded(mixed):
    options = options_for(default_course())
    course = default_course()
    steps = [resolve_step(s) for s in step_ids_for(course, mixed[0])]
    with batch_engine(options) as engine:
        engine.grade(mixed[0], steps)
        engine.grade(mixed[0], steps)
        session = engine.suites.session
        assert session is not None
        session.close()  # as after an error inside pytest
        report = engine.grade(mixed[1], steps, label="wrong3")
        assert engine.suites.session is not session and engine.suites.session.open
    assert report.steps[2].status.value == "failed"


def test_grade_on_the_command_line_gives_each_submission_the_report_it_gets_alone(mixed, tmp_path):
    """The console script, one worker (one reused session) over the class vs. each alone."""
    exe = [shutil.which("attn-practice") or "attn-practice"]
    together = subprocess.run([*exe, "grade", *map(str, mixed), "--format", "json", "--no-cache",
                               "--jobs", "1"], capture_output=True, text=True, timeout=600)
    assert together.returncode in (0, 1), together.stderr[-2000:]
    reports = without_timings(json.loads(together.stdout))
    for sub, report in zip(mixed[:3], reports, strict=False):
        alone = subprocess.run([*exe, "grade", str(sub), "--format", "json", "--no-cache"],
                               capture_output=True, text=True, timeout=300)
        one = without_timings(json.loads(alone.stdout))
        assert (one[0] if isinstance(one, list) else one) == report
