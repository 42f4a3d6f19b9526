"""Only what changed: a hosted check of step 5 grades the earlier steps it imports when, and only
when, their code changed since their last result (as `check` does in a workspace).

Through the app with the real local pool and sandboxes; counted by the reports stored.
"""

from __future__ import annotations

import pytest
from conftest import solution_source
from test_host_support import hosted_class, implementation

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.host.auth import RateLimiter
from attn_practice.grader.host.checks.imports import imports_of, to_grade_first
from attn_practice.grader.host.context import Limits

CORE = load_catalog()[:5]


def reports_per_step(h, learner_id: str) -> dict[str, int]:
    rows = [r for r in h.ctx.store.report_history() if r.learner_id == learner_id]
    out: dict[str, int] = {}
    for r in rows:
        out[r.step] = out.get(r.step, 0) + 1
    return out


def test_imports_are_read_from_the_sources_transitively():
    files = {e.file: solution_source(e.id) for e in CORE}
    assert [e.id for e in imports_of("step5", files)] == ["step1", "step2", "step3", "step4"]
    assert to_grade_first("step5", files, unchanged=[e.id for e in CORE]) == []
    assert to_grade_first("step5", files, unchanged=["step1", "step2", "step4"]) == ["step3"]
    stubs = {e.file: e.stub_source() for e in CORE}
    assert to_grade_first("step5", {**stubs, "step5_attention.py": files["step5_attention.py"]}, []) == []


@pytest.mark.slow
def test_a_step5_check_grades_imported_steps_only_when_they_changed(tmp_path):
    limits = Limits(checks=RateLimiter(burst=100, per_second=100.0))
    with hosted_class(tmp_path / "c", limits=limits) as h:
        b = h.browser().join("Ann")
        for e in CORE:
            assert b.save(e.id, solution_source(e.id), base="").status_code == 200
        for e in CORE[:4]:
            assert b.check(e.id).json()["status"] == "passed"
        learner_id = h.ctx.store.learners()[0].id
        before = reports_per_step(h, learner_id)
        assert before == {"step1": 1, "step2": 1, "step3": 1, "step4": 1}

        r = b.check("step5").json()  # nothing it imports changed: step 5 alone
        assert r["status"] == "passed"
        assert reports_per_step(h, learner_id) == {**before, "step5": 1}

        # step 3 changes (a mistake) without a check of its own: step 5's check grades it first
        assert b.save("step3", implementation("step3", "wrong_ignores_axis"), base=None,
                      force=True).status_code == 200
        r = b.check("step5").json()
        after = reports_per_step(h, learner_id)
        assert after == {**before, "step3": 2, "step5": 2}
        latest3 = h.ctx.store.latest_report(learner_id, "step3")
        assert latest3.status == "failed" and "ignores-axis" in latest3.diagnoses
        assert "step3" in r["html"]  # the failure is blamed on the step that fails

        r = b.check("step5").json()  # step 3 has its result now: not graded again
        assert reports_per_step(h, learner_id) == {**after, "step5": 3}
