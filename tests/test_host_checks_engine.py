"""A hosted check on the batch path's engine: collected once per worker, a wall-clock budget of
its own, and only what changed graded (issue 40, issue 35 item 2).

Through the real local pool (`LocalCheckRunner`, spawned worker processes, real sandboxes), as
the server runs it; counts, never times.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import LOOPS_STEP1, WAITS_ONCE_STEP1, solution_source
from test_host_support import implementation

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.host.checks import work
from attn_practice.grader.host.checks.base import CheckRequest
from attn_practice.grader.host.checks.local import LocalCheckRunner

SLEEPY = ("import time\nimport numpy as np\n\n"
          "def dot_scores(q, k):\n    time.sleep(0.6)\n    return q @ np.swapaxes(k, -1, -2)\n")


def right_files() -> dict[str, str]:
    """Every core step right, later steps importing earlier ones (as a learner writes them)."""
    return {e.file: solution_source(e.id) for e in load_catalog()[:5]}


@pytest.mark.slow
def test_a_check_worker_collects_its_pytest_session_once():
    runner = LocalCheckRunner(work.host_options(), jobs=1)
    try:
        runner.warm()
        files = right_files()
        wrong = dict(files, **{"step3_softmax.py": implementation("step3", "wrong_ignores_axis")})
        for step, fs in (("step1", files), ("step3", wrong), ("step5", files), ("step2", files),
                         ("step3", files)):
            result = runner.run(CheckRequest("ann", step, fs))
            assert result["report"]["steps"][0]["id"] == step, result
        (stats,) = runner.worker_stats()
        assert stats["checks"] == 5
        assert stats["collections"] == 1  # at warm-up; no check configured or collected pytest again
    finally:
        runner.close()


@pytest.mark.slow
def test_a_sleeping_learner_check_ends_at_its_wall_clock_budget_as_a_timeout():
    """Each call sleeps under the per-call limit; the check's own budget (sleep counted) ends it."""
    options = replace(work.host_options(), limits=work.budgeted(work.host_options().limits, 3.0))
    runner = LocalCheckRunner(options, jobs=1)
    try:
        result = runner.run(CheckRequest("sleeper", "step1", {"step1_scores.py": SLEEPY}))
        step = result["report"]["steps"][0]
        assert step["status"] == "timeout", step
        stopped = [t for t in step["tests"] if t["status"] == "timeout"]
        assert stopped and "more than 3 s in your code" in stopped[0]["message"]
        # the worker is free again for the next learner
        assert runner.run(CheckRequest("next", "step1", right_files()))["report"]["steps"][0][
            "status"] == "passed"
    finally:
        runner.close()


@pytest.mark.slow
def test_a_right_function_kept_waiting_in_a_full_lab_is_not_told_it_timed_out():
    """A call that waits past its limit without computing (a full lab's machine) still passes:
    the per-call limit counts the sandbox's CPU seconds; an endless loop still times out."""
    runner = LocalCheckRunner(work.host_options(), jobs=1)
    try:
        result = runner.run(CheckRequest("waits", "step1", {"step1_scores.py": WAITS_ONCE_STEP1}))
        assert result["report"]["steps"][0]["status"] == "passed", result["report"]["steps"][0]
        result = runner.run(CheckRequest("loops", "step1", {"step1_scores.py": LOOPS_STEP1}))
        assert result["report"]["steps"][0]["status"] == "timeout"
    finally:
        runner.close()


def test_hosted_options_carry_the_check_budget_for_every_step():
    from attn_practice.grader.course import default_course

    opts = work.host_options(default_course())
    assert opts.limits.submission_timeout <= work.CHECK_BUDGET
    assert opts.limits.step_timeout <= work.CHECK_BUDGET
    assert all(lim.submission_timeout <= work.CHECK_BUDGET for lim in opts.step_limits.values())
    assert opts.shrink is False  # the batch path: no Hypothesis run per mistake
    assert opts.limits.cpu_clock and all(lim.cpu_clock for lim in opts.step_limits.values())
