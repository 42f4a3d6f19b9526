"""`attn-practice selftest`: do the hidden suites catch what they should?

For every step: the reference passes; every catalogued mistake fails and is
diagnosed with its own id; every catalogued correct variant passes. With a
course file the instructor's extra suites run too, so a new private suite is
checked against the same catalogue (it must not reject a correct variant).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.course import Course, default_course
from attn_practice.grader.results import GradeReport
from attn_practice.grader.staff.batch import _grade_one, options_for, worker_pool
from attn_practice.reference import attention
from attn_practice.reference.mistakes import learner_source, mistakes_for, pairs_for
from attn_practice.reference.variants import variant_source, variants_for


@dataclass(frozen=True)
class Case:
    step: str
    kind: str  # reference | mistake | pair | variant
    name: str
    expected_id: str  # the diagnosis a mistake must get ("" otherwise)
    source: str
    expected_ids: tuple[str, ...] = ()  # a pair: every id must be named


@dataclass
class CaseResult:
    case: Case
    status: str
    diagnoses: list[str]

    @property
    def ok(self) -> bool:
        if self.case.kind in ("mistake", "pair"):
            return self.caught and self.diagnosed
        return self.status == "passed"

    @property
    def caught(self) -> bool:
        return self.status != "passed"

    @property
    def diagnosed(self) -> bool:
        if self.case.kind == "pair":
            return set(self.case.expected_ids) <= set(self.diagnoses)
        return self.case.expected_id in self.diagnoses


@dataclass
class StepSummary:
    step: str
    results: list[CaseResult] = field(default_factory=list)

    def of(self, kind: str) -> list[CaseResult]:
        return [r for r in self.results if r.case.kind == kind]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


def cases_for(ex: Exercise) -> list[Case]:
    ref_source = inspect.getsource(attention)
    cases = [Case(ex.id, "reference", "reference", "", ref_source)]
    for mistake, fn in mistakes_for(ex.id):
        cases.append(Case(ex.id, "mistake", fn.__name__, mistake.id, learner_source(fn, ex.id)))
    for pair in pairs_for(ex.id):
        cases.append(Case(ex.id, "pair", pair.impl.__name__, "", learner_source(pair.impl, ex.id),
                          pair.ids))
    for name, _fn in variants_for(ex.id):
        cases.append(Case(ex.id, "variant", name, "", variant_source(name, ex.id)))
    return cases


def run_selftest(steps: Sequence[Exercise] | None = None, course: Course | None = None,
                 jobs: int | None = None) -> list[StepSummary]:
    """Grade every case through the real engine and sandbox; summaries in step order."""
    course = course or default_course()
    steps = list(steps or course.steps or load_catalog())
    options = options_for(course)
    cases = [c for ex in steps for c in cases_for(ex)]
    by_step = {ex.id: ex for ex in steps}
    summaries = {ex.id: StepSummary(ex.id) for ex in steps}
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(cases)))
    with worker_pool(options, jobs) as pool:
        futures = [
            pool.submit(_grade_one, ".", f"{c.step}:{c.name}", [c.step],
                        {by_step[c.step].file: c.source.encode()})
            for c in cases
        ]
        for case, fut in zip(cases, futures, strict=True):
            report = GradeReport.from_dict(fut.result())
            step = report.steps[0]
            summaries[case.step].results.append(CaseResult(case, step.status.value, step.diagnosis_ids))
    return [summaries[ex.id] for ex in steps]


def selftest_ok(summaries: Sequence[StepSummary]) -> bool:
    return all(s.ok for s in summaries)


__all__ = ["Case", "CaseResult", "StepSummary", "cases_for", "run_selftest", "selftest_ok"]
