"""`attn-practice selftest`: every catalogued mistake caught and named, every variant accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import LOOPS_STEP1, WAITS_ONCE_STEP1

from attn_practice.cli import cli
from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.staff.selftest import cases_for


def test_every_step_has_mistakes_and_variants_to_check():
    for ex in load_catalog():
        kinds = [c.kind for c in cases_for(ex)]
        assert kinds.count("reference") == 1
        assert kinds.count("mistake") >= 3, ex.id
        assert kinds.count("variant") >= 4, ex.id


@pytest.mark.slow
def test_selftest_passes_for_every_step():
    result = CliRunner().invoke(cli, ["selftest", "--jobs", "2"])
    assert "Traceback" not in result.output
    assert result.exit_code == 0, result.output
    assert "selftest passed" in result.output
    for ex in load_catalog():
        assert ex.id in result.output


def test_selftest_reports_a_private_suite_that_rejects_correct_code(tmp_path):
    """An instructor's suite that is wrong is caught: correct variants fail under it."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_too_strict.py").write_text(
        "import numpy as np\nimport pytest\n\n"
        "@pytest.mark.step('step2')\n"
        "def test_wrong_expectation(step):\n"
        "    \"\"\"An instructor test with a wrong expected value\"\"\"\n"
        "    got = step.call(np.ones((2, 2)), 4)\n"
        "    step.require(bool(np.all(got == 1.0)), 'expected ones', (np.ones((2, 2)), 4))\n"
    )
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step2]\nmax_examples: 5\nextra_suites: [private/]\n")
    result = CliRunner().invoke(cli, ["selftest", "--course", str(course), "--jobs", "2"])
    assert result.exit_code == 1
    assert "selftest found problems" in result.output
    assert "variant" in result.output and "BAD" in result.output
    # ... and says which test failed the correct code, why, and how to reproduce it
    bad = result.output[result.output.index("BAD"):]
    assert "failed An instructor test with a wrong expected value: expected ones" in bad
    assert "repro: scale_scores(np.array([[1., 1.], [1., 1.]]), 4)" in bad


def test_readme_lists_every_catalogued_mistake_id():
    """The README's table of known mistakes names every id in the catalogue (and no other)."""
    import re

    from attn_practice.reference.mistakes import MISTAKES

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Known mistakes the diagnosis names", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.M))
    assert listed == set(MISTAKES)


@pytest.mark.slow
def test_a_case_slowed_by_a_busy_machine_is_run_again_alone_not_reported(monkeypatch):
    """A right answer whose first call waits past the 2 s limit (as on a loaded CI machine: seen
    once, a catalogued mistake timing out instead of being named) is graded again alone with
    each call's limit on the CPU clock, as `grade` confirms a timeout; an endless loop stays one."""
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.staff import selftest as st

    cases = [st.Case("step1", st.CaseKind.VARIANT, "waits_once", "", WAITS_ONCE_STEP1),
             st.Case("step1", st.CaseKind.VARIANT, "loops", "", LOOPS_STEP1)]
    monkeypatch.setattr(st, "cases_for", lambda ex: cases)
    (summary,) = st.run_selftest([resolve_step("step1")], jobs=1)
    by_name = {r.case.name: r for r in summary.results}
    assert by_name["waits_once"].status is st.Status.PASSED, by_name["waits_once"].not_passed
    assert by_name["loops"].status is st.Status.TIMEOUT
