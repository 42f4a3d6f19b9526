"""The browser report and lessons as HTML: every learner-derived string is escaped, wherever it sits.

The report is built from the same `StepResult` the terminal renders; a
learner controls what their code prints, raises and returns, so each field is
filled with markup here and must come out as text.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.results import Diagnosis, Failure, Status, StepResult
from attn_practice.grader.results import TestResult as Outcome
from attn_practice.grader.teaching.web import render
from attn_practice.grader.teaching.worked_example import Row

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&\x1b[31m\x00"


def hostile_step() -> StepResult:
    f = Failure(kind="value", summary=EVIL, details=f"worst element (0, 1): got {EVIL}\natol=1e-9 {EVIL}",
                repro=f"dot_scores({EVIL})", traceback=f'  File "/ws/step1_scores.py", line 3\n    {EVIL}',
                hint=EVIL)
    return StepResult(
        id="step1", title=EVIL, status=Status.FAILED, score=0, max_score=1,
        diagnoses=(Diagnosis("transpose-all-axes", EVIL, EVIL, EVIL),),
        tests=(Outcome(EVIL, Status.FAILED, EVIL, f), Outcome("ok " + EVIL, Status.PASSED)),
        output=EVIL * 3, notes=(EVIL,), error=EVIL, file="step1_scores.py", function="dot_scores")


def no_markup_escaped(html: str) -> None:
    assert "<script" not in html and "<img" not in html
    assert "onerror=alert" not in html.replace("onerror=alert(2)&gt;", "")  # only as text
    assert "\x00" not in html and "\x1b" not in html
    assert "&lt;script&gt;" in html


def test_every_field_of_a_step_result_is_escaped():
    html = render.step_html(hostile_step(), verbose=True, root="/ws")
    no_markup_escaped(html)
    # and the content is all there, as on the terminal
    for what in ("Known mistake", "transpose-all-axes", "Your code (most recent call last)",
                 "Reproduce it", "Your code printed", "note:", "worst element ▸", "tolerance ▸",
                 "Next:", "✗", "✓", "failed"):
        assert what in html, what
    assert 'File &quot;step1_scores.py&quot;' in html  # the learner's file by its name, not the temp path


def test_status_is_never_carried_by_colour_alone():
    html = render.step_html(hostile_step())
    for t in re.findall(r'<li class="(\w+)">(.*?)</li>', html):
        cls, body = t
        assert {"passed": "passed:", "failed": "failed:"}[cls] in body


def test_worked_example_marks_the_first_difference_and_escapes():
    rows = [Row("scores", "step1", "dot_scores(q, K)", np.array([[2.0, 0, 1]]), np.array([[2.0, 0, 1]]), True),
            Row("scaled", "step2", "scale_scores(scores, 4)", np.array([[1.0, 0, 0.5]]),
                np.array([[0.5, 0, 0.25]]), False, first_divergence=True),
            Row("weights", "step3", "softmax(scaled)", np.array([[0.5, 0.2, 0.3]]), None, False,
                problem=EVIL)]
    html = render.worked_example_html(rows)
    no_markup_escaped(html)
    assert '<tr class="first">' in html and "first difference" in html
    assert "Your numbers first differ at <strong>scaled</strong>" in html


def test_what_now_points_at_the_file_and_the_next_step():
    s = hostile_step()
    nxt = load_catalog()[1]
    html = render.next_html(s, hints_used=1, hints_total=3, next_step=nxt)
    assert "step1_scores.py" in html and "1 of 3" in html
    passed = StepResult("step1", "t", Status.PASSED, 1, 1, file="step1_scores.py")
    assert f'href="/step/{nxt.id}"' in render.next_html(passed, hints_used=0, hints_total=3, next_step=nxt)


@pytest.mark.parametrize("ex", load_catalog(), ids=lambda e: e.id)
def test_every_lesson_renders_as_html_without_raw_markup(ex):
    for text in (ex.lesson, ex.task, *ex.hints, ex.solution_note):
        html = render.markdown(text)
        assert "```" not in html and "**" not in html
        # no tag but our own few
        assert set(re.findall(r"</?([a-z0-9]+)", html)) <= {"p", "h3", "h4", "h5", "h6", "ul", "ol", "li",
                                                            "pre", "code", "strong", "em"}


def test_markdown_escapes_html_in_the_text():
    html = render.markdown(f"# {EVIL}\n\n- `{EVIL}`\n\n```\n{EVIL}\n```\n\n**{EVIL}**")
    no_markup_escaped(html)


def test_the_page_files_are_package_data():
    """`pip install .` (not only -e) must carry the page: every static file matches a declared glob."""
    import fnmatch
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = Path(render.__file__).resolve().parents[3]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "attn_practice.grader.teaching.web"]
    assert "attn_practice.grader.teaching.web" in tomllib.loads(
        (root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    static = Path(render.__file__).parent / "static"
    files = [p.relative_to(static.parent).as_posix() for p in static.iterdir()]
    assert {"static/index.html", "static/app.js", "static/style.css"} <= set(files)
    for f in files:
        assert any(fnmatch.fnmatch(f, g) for g in globs), f
