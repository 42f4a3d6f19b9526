"""`attn-practice selftest`: do the hidden suites catch what they should?

For every step: the reference passes; every catalogued mistake fails and is
diagnosed with its own id; every catalogued correct variant passes. With a
course file the instructor's extra suites run too, so a new private suite is
checked against the same catalogue: every private test must pass on the
reference and on every correct variant, and the report says which catalogued
mistakes the private tests catch by themselves (CONTRACT §4.2).

A case that times out is graded again alone, each call's limit on the
sandbox's CPU clock (as `grade` confirms a timeout): a machine busy with
other work never makes a catalogued mistake look undiagnosed.
"""

from __future__ import annotations

import enum
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.course import Course, default_course
from attn_practice.grader.engine.engine import RunOptions
from attn_practice.grader.results import GradeReport, Status, TestResult
from attn_practice.grader.staff.batch import options_for, worker_pool
from attn_practice.grader.staff.pool import grade_task
from attn_practice.grader.staff.timeouts import margin_options, timed_out_steps
from attn_practice.reference import attention
from attn_practice.reference.mistakes import learner_source, mistakes_for, pairs_for
from attn_practice.reference.variants import variant_source, variants_for


class CaseKind(str, enum.Enum):
    """What a case is, and so what it must do: pass (reference, variant) or be caught (mistake)."""

    REFERENCE = "reference"
    MISTAKE = "mistake"
    PAIR = "pair"  # two catalogued mistakes at once: both ids must be named
    VARIANT = "variant"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Case:
    step: str
    kind: CaseKind
    name: str
    expected_id: str  # the diagnosis a mistake must get ("" otherwise)
    source: str
    expected_ids: tuple[str, ...] = ()  # a pair: every id must be named


@dataclass
class CaseResult:
    case: Case
    status: Status
    diagnoses: list[str]
    #: The course's private tests for this step that ran on the case, and those that failed.
    private_ran: tuple[str, ...] = ()
    private_failed: tuple[str, ...] = ()
    #: ... and those that did not pass (failed, crashed, timed out, skipped)
    private_not_passed: tuple[str, ...] = ()
    #: Every test that did not pass, with why and on what input: what a staff member needs
    #: to act on a correct variant that failed (or to see what caught a mistake).
    not_passed: tuple[TestResult, ...] = ()
    #: Why the whole step could not run (missing file, syntax error, crash), if it could not.
    error: str = ""

    @property
    def ok(self) -> bool:
        if self.case.kind in (CaseKind.MISTAKE, CaseKind.PAIR):
            return self.caught and self.diagnosed
        return self.status is Status.PASSED

    @property
    def caught(self) -> bool:
        return self.status is not Status.PASSED

    @property
    def caught_by_private(self) -> bool:
        return bool(self.private_failed)

    @property
    def diagnosed(self) -> bool:
        if self.case.kind is CaseKind.PAIR:
            return set(self.case.expected_ids) <= set(self.diagnoses)
        return self.case.expected_id in self.diagnoses


@dataclass
class StepSummary:
    step: str
    results: list[CaseResult] = field(default_factory=list)

    #: The private tests the course has for this step (names as reports show them).
    private: tuple[str, ...] = ()

    def of(self, kind: CaseKind) -> list[CaseResult]:
        return [r for r in self.results if r.case.kind is kind]

    @property
    def private_missing(self) -> list[str]:
        """Private tests that did not run on the reference: a private test must never be skipped."""
        ran = {n for r in self.of(CaseKind.REFERENCE) for n in r.private_ran}
        return [n for n in self.private if n not in ran]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and not self.private_missing


def cases_for(ex: Exercise) -> list[Case]:
    ref_source = inspect.getsource(attention)
    cases = [Case(ex.id, CaseKind.REFERENCE, "reference", "", ref_source)]
    for mistake, fn in mistakes_for(ex.id):
        cases.append(Case(ex.id, CaseKind.MISTAKE, fn.__name__, mistake.id, learner_source(fn, ex.id)))
    for pair in pairs_for(ex.id):
        cases.append(Case(ex.id, CaseKind.PAIR, pair.impl.__name__, "", learner_source(pair.impl, ex.id),
                          pair.ids))
    for name, _fn in variants_for(ex.id):
        cases.append(Case(ex.id, CaseKind.VARIANT, name, "", variant_source(name, ex.id)))
    return cases


def run_selftest(steps: Sequence[Exercise] | None = None, course: Course | None = None,
                 jobs: int | None = None) -> list[StepSummary]:
    """Grade every case through the real engine and sandbox; summaries in step order."""
    course = course or default_course()
    steps = list(steps or course.steps or load_catalog())
    options = options_for(course)
    cases = [c for ex in steps for c in cases_for(ex)]
    file_of = {ex.id: ex.file for ex in steps}
    private: dict[str, list[str]] = {ex.id: [] for ex in steps}
    if course.extra_suites:
        from attn_practice.grader.staff.private_suites import collect

        for t in collect(list(course.extra_suites))[0]:
            private.setdefault(t.step, []).append(t.name)
    summaries = {ex.id: StepSummary(ex.id, private=tuple(private[ex.id])) for ex in steps}
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(cases)))
    reports = _grade_cases(options, cases, file_of, jobs)
    again = [i for i, r in enumerate(reports) if timed_out_steps(r) and not r.grader_failed]
    if again:  # as `grade` confirms a timeout: alone, each call's limit on the CPU clock
        steps_again = sorted({cases[i].step for i in again})
        for i, report in zip(again, _grade_cases(margin_options(options, steps_again),
                                                 [cases[i] for i in again], file_of, 1), strict=True):
            reports[i] = report
    for case, report in zip(cases, reports, strict=True):
        step = report.steps[0]
        mine = set(private[case.step])
        ran = tuple(t.name for t in step.tests if t.name in mine)
        failed = tuple(t.name for t in step.tests if t.name in mine and _judged_wrong(t))
        not_passed = tuple(t.name for t in step.tests if t.name in mine and t.status is not Status.PASSED)
        summaries[case.step].results.append(
            CaseResult(case, step.status, step.diagnosis_ids, ran, failed, not_passed,
                       tuple(t for t in step.tests if t.status is not Status.PASSED), step.error))
    for summary in summaries.values():
        _discount_unsound(summary)
    return [summaries[ex.id] for ex in steps]


def _grade_cases(options: RunOptions, cases: Sequence[Case], file_of: dict[str, str],
                 jobs: int) -> list[GradeReport]:
    """Each case's report, graded through the real engine and sandbox by `jobs` workers
    (`file_of`: step id -> the learner file the case's source is graded as)."""
    pool, setup = worker_pool(options, jobs)
    with pool:
        futures = [pool.submit(grade_task, setup, ".", f"{c.step}:{c.name}", [c.step],
                               {file_of[c.step]: c.source.encode()}) for c in cases]
        return [GradeReport.from_dict(f.result()) for f in futures]


def _judged_wrong(test: TestResult) -> bool:
    """A private test that *fails* the answer: not one that crashed, timed out or was skipped."""
    return test.status is Status.FAILED and not (test.failure is not None and test.failure.kind.grader_fault)


def _discount_unsound(summary: StepSummary) -> None:
    """A private test that does not pass on the reference and every correct variant catches
    nothing: it fails right code too. Its failures on mistakes are not counted as catches."""
    unsound = {n for r in summary.results if r.case.kind in (CaseKind.REFERENCE, CaseKind.VARIANT)
               for n in summary.private if n not in r.private_ran or n in r.private_not_passed}
    for r in summary.results:
        if r.case.kind in (CaseKind.MISTAKE, CaseKind.PAIR):
            r.private_failed = tuple(n for n in r.private_failed if n not in unsound)


def selftest_ok(summaries: Sequence[StepSummary]) -> bool:
    return all(s.ok for s in summaries)


__all__ = ["Case", "CaseKind", "CaseResult", "StepSummary", "cases_for", "run_selftest", "selftest_ok"]
