"""A timeout costs little: confirming one runs again only the tests that timed out, with the
call limit counted in the sandbox's CPU time (issue 40 item 4).

Real engine and sandboxes, in this process; what ran is read from the suites' own outcomes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.engine.session import SuiteSession
from attn_practice.grader.results import Status
from attn_practice.grader.staff import timeouts

#: right, except that a batched input (3-D) spins forever: one kind of test times out
SPINS_ON_BATCHES = ("import numpy as np\n\n"
                    "def dot_scores(q, k):\n"
                    "    while q.ndim > 2:\n        pass\n"
                    "    return q @ k.T\n")
#: right, but its first batched call waits 1.5 call limits without computing (as a call does
#: on a machine kept busy by others): a timeout by the wall clock, none in CPU time
STALLS_ONCE = ("import time\nimport numpy as np\n\n_stalled = []\n\n"
               "def dot_scores(q, k):\n"
               "    if q.ndim > 2 and not _stalled:\n        _stalled.append(1)\n        time.sleep(3.0)\n"
               "    return q @ np.swapaxes(k, -1, -2)\n")


def graded(tmp_path: Path, source: str) -> tuple[RunOptions, Path, object]:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(source)
    options = RunOptions(shrink=False, persist_examples=False)
    with Engine(options) as engine:
        report = engine.grade(sub, [resolve_step("step1")])
    return options, sub, report


@pytest.mark.slow
def test_confirming_a_timeout_reruns_only_the_timed_out_tests(tmp_path, monkeypatch):
    options, sub, report = graded(tmp_path, SPINS_ON_BATCHES)
    step = report.steps[0]
    timed_out = {t.name for t in step.tests if t.status is Status.TIMEOUT}
    assert timed_out and len(timed_out) < len(step.tests), step.tests
    ran: list[str] = []
    original = SuiteSession.run

    def spy(self, contexts, only=frozenset()):
        outcomes = original(self, contexts, only)
        ran.extend(t.name for results in outcomes.values() for t in results)
        return outcomes

    monkeypatch.setattr(SuiteSession, "run", spy)
    (confirmed,) = timeouts.confirm(options, [(sub, report)])
    assert confirmed.extra.get("timeout_confirmed") is True
    assert set(ran) == timed_out  # not the step's other tests


@pytest.mark.slow
def test_a_call_that_only_waited_is_not_confirmed_in_cpu_time(tmp_path):
    """Over its 2 s limit by the wall clock (as on a busy machine), well under it in CPU time."""
    options, sub, report = graded(tmp_path, STALLS_ONCE)
    assert report.steps[0].status is Status.TIMEOUT, report.steps[0]
    (again,) = timeouts.confirm(options, [(sub, report)])
    assert not again.extra.get("timeout_confirmed")


def test_confirming_limits_count_cpu_time_at_the_same_call_limit():
    opts = timeouts.margin_options(RunOptions(), ["step1"])
    lim = opts.step_limits["step1"]
    assert lim.cpu_clock is True and lim.call_timeout == resolve_step("step1").timeout
    assert lim.submission_timeout == RunOptions().limits.submission_timeout  # never costs more
