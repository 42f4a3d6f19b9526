"""A widget call is timed on the sandbox's CPU clock, not the wall's.

On a loaded machine (a full lab, a CI run) a right function can wait past its
call limit without computing anything slow; the page then said "your
dot_scores timed out" under numbers computed by the reference (seen once in
CI). A call that only waited now answers; an endless loop still times out.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import LOOPS_STEP1, WAITS_ONCE_STEP1

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.teaching.web.widgets import LearnerFunctions

pytestmark = pytest.mark.slow

@pytest.mark.parametrize("source, answers", [(WAITS_ONCE_STEP1, True), (LOOPS_STEP1, False)], ids=["waits", "loops"])
def test_a_widget_call_that_only_waits_answers_and_a_loop_times_out(tmp_path, source, answers):
    ex = resolve_step("step1")
    (tmp_path / ex.file).write_text(source)
    fns = LearnerFunctions(tmp_path)
    Q = np.arange(6.0).reshape(2, 3)
    K = np.ones((4, 3))
    try:
        got, why = fns(ex, "v1", Q, K)
    finally:
        fns.close()
    if answers:
        assert why == "" and np.allclose(got, Q @ K.T)
    else:
        assert got is None and why == "your dot_scores timed out on this input"


def test_the_hosted_widgets_limits_count_cpu_seconds():
    from attn_practice.grader.host.checks.widget_work import WIDGET_LIMITS

    assert WIDGET_LIMITS.cpu_clock is True
