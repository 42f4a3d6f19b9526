"""Every check of a step, named, with ✓ or ✗: what Gradescope and GitHub students read.

"All checks passed." without the checks, or a failure without the failing
test's name, tells a student nothing they can act on. `check_lines` lists
every test of a step (hidden and private alike) with its mark, the failing
ones first, and `first_failing` names the test a report should lead with.
Test names are our suites' docstrings or an instructor's: still passed
through `label` (one line, no control characters) like any text.
"""

from __future__ import annotations

from attn_practice.grader.reports._text import label
from attn_practice.grader.results import Status, StepResult, TestResult

PASS, FAIL, SKIP = "✓", "✗", "–"


def _bad(test: TestResult) -> bool:
    return test.status not in (Status.PASSED, Status.SKIPPED)


def first_failing(step: StepResult) -> TestResult | None:
    """The test a report names first: the first one that did not pass."""
    return next((t for t in step.tests if _bad(t)), None)


def check_line(test: TestResult) -> str:
    mark = PASS if test.status is Status.PASSED else SKIP if test.status is Status.SKIPPED else FAIL
    why = "" if test.status in (Status.PASSED, Status.FAILED) else f" ({test.status.value})"
    return f"{mark} {label(test.name)}{why}"


def check_lines(step: StepResult) -> list[str]:
    """One line per check: those that did not pass first (in suite order), then the rest."""
    ordered = [t for t in step.tests if _bad(t)] + [t for t in step.tests if not _bad(t)]
    return [check_line(t) for t in ordered]


def checks_heading(step: StepResult) -> str:
    """`All 7 checks passed:` or `Checks: 3 of 7 passed:` ("" for a step with no checks)."""
    n = len(step.tests)
    if not n:
        return ""
    passed = sum(t.status is Status.PASSED for t in step.tests)
    if passed == n:
        return f"All {n} check{'s' if n > 1 else ''} passed:"
    return f"Checks: {passed} of {n} passed:"


def failing_headline(step: StepResult) -> str:
    """`Failed: <the first failing test's name>` ("" when none failed)."""
    test = first_failing(step)
    if test is None:
        return ""
    word = {Status.TIMEOUT: "Timed out", Status.ERROR: "Could not run"}.get(test.status, "Failed")
    return f"{word}: {label(test.name)}"


__all__ = ["check_line", "check_lines", "checks_heading", "failing_headline", "first_failing"]
