"""When a timeout may be cached: only when it was slow by a wide margin, not by bad luck.

A call stopped at its time limit may be an infinite loop or a machine kept
busy by other work. Caching the second kind would keep an honest student's
timeout forever; never caching either (as before) re-graded every infinite
loop on every run. The rule: a fresh report with a timeout is confirmed by
running again only the tests that timed out (not their whole steps: one
hostile hand-in that times out on every third call cost a worker minutes),
alone (no neighbour in the pool), at the same call limits counted in the
sandbox's CPU time rather than wall time (`Limits.cpu_clock`; a call that
only waited for a busy machine finishes), the grader waiting up to
`launcher.CPU_CLOCK_WALL` (3x) as long for a call, within the same step and
submission budgets as the grading. If each of them times out again, the report
(the one graded with the course's own limits) is marked
`extra["timeout_confirmed"]` and cached like any other verdict. If not, it
is not cached, and the next run grades it again. `grade --regrade-timeouts`
ignores cached timeouts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport, Status
from attn_practice.grader.sandbox.launcher import DEFAULT_CALL_TIMEOUT, Limits
from attn_practice.grader.staff.worker import batch_engine


def timed_out_steps(report: GradeReport) -> list[str]:
    return [s.id for s in report.steps
            if s.status is Status.TIMEOUT or any(t.status is Status.TIMEOUT for t in s.tests)]


def timed_out_tests(report: GradeReport) -> dict[str, set[str]]:
    """step id -> the names of its tests that timed out (empty: the step itself, e.g. at import)."""
    return {s.id: {t.name for t in s.tests if t.status is Status.TIMEOUT}
            for s in report.steps if s.id in timed_out_steps(report)}


def _confirming(limits: Limits, call_timeout: float) -> Limits:
    """The same limits, the call limit counted in CPU seconds (the grader waiting up to
    CPU_CLOCK_WALL times as long for a call; the step's and submission's budgets as they were,
    so a confirmation never costs more than the grading did)."""
    return replace(limits, call_timeout=call_timeout, cpu_clock=True)


def margin_options(options: RunOptions, step_ids: Iterable[str]) -> RunOptions:
    """`options` for confirming the timeouts of `step_ids` (see the module docstring)."""
    step_limits = dict(options.step_limits)
    for sid in step_ids:
        base = options.step_limits.get(sid, options.limits)
        call = base.call_timeout or resolve_step(sid).timeout or DEFAULT_CALL_TIMEOUT
        step_limits[sid] = _confirming(base, call)
    return replace(options, step_limits=step_limits, persist_examples=False,
                   limits=_confirming(options.limits, options.limits.call_timeout or DEFAULT_CALL_TIMEOUT))


def confirm(options: RunOptions, graded: list[tuple[Path, GradeReport]]) -> list[GradeReport]:
    """Each report, marked `timeout_confirmed` when its timed-out tests time out again.

    `graded`: (the folder that was graded, its fresh report). Reports without
    a timeout, or with a grader failure, come back unchanged.
    """
    todo = [i for i, (_, r) in enumerate(graded) if timed_out_steps(r) and not r.grader_failed]
    out = [r for _, r in graded]
    if not todo:
        return out
    steps = sorted({sid for i in todo for sid in timed_out_steps(graded[i][1])})
    engine = batch_engine(margin_options(options, steps))  # one collected session: tests picked by name
    try:
        for i in todo:
            path, report = graded[i]
            if _again(engine, path, report):
                out[i] = replace(report, extra={**report.extra, "timeout_confirmed": True})
    finally:
        engine.close()
    return out


def _again(engine: Engine, path: Path, report: GradeReport) -> bool:
    """Whether every test (or step) that timed out in `report` times out again, run alone."""
    wanted = timed_out_tests(report)
    engine.suites.only = frozenset(n for names in wanted.values() for n in names)
    if any(not names for names in wanted.values()):
        engine.suites.only = frozenset()  # a step stopped before its tests: the whole step again
    again = engine.grade(path, [resolve_step(s) for s in wanted], label=report.submission)
    if again.grader_failed:
        return False
    got = timed_out_tests(again)
    return all(sid in got and names <= got[sid] for sid, names in wanted.items())


__all__ = ["confirm", "margin_options", "timed_out_steps", "timed_out_tests"]
