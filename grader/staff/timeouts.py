"""When a timeout may be cached: only when it was slow by a wide margin, not by bad luck.

A call stopped at its time limit may be an infinite loop or a machine kept
busy by other work. Caching the second kind would keep an honest student's
timeout forever; never caching either (as before) re-graded every infinite
loop on every run. The rule: a fresh report with a timeout is confirmed by
grading its timed-out steps once more, alone (no neighbour in the pool), with
every time limit multiplied by `TIMEOUT_MARGIN` (3x). If each of them times
out again, the step overran its limit by at least that margin: the report
(the one graded with the course's own limits) is marked
`extra["timeout_confirmed"]` and cached like any other verdict. If not, it is
not cached, and the next run grades it again. `grade --regrade-timeouts`
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
from attn_practice.grader.staff.cache import TIMEOUT_MARGIN


def timed_out_steps(report: GradeReport) -> list[str]:
    return [s.id for s in report.steps
            if s.status is Status.TIMEOUT or any(t.status is Status.TIMEOUT for t in s.tests)]


def _wider(limits: Limits, call_timeout: float) -> Limits:
    return replace(limits, call_timeout=call_timeout * TIMEOUT_MARGIN,
                   load_timeout=limits.load_timeout * TIMEOUT_MARGIN,
                   step_timeout=limits.step_timeout * TIMEOUT_MARGIN,
                   submission_timeout=limits.submission_timeout * TIMEOUT_MARGIN)


def margin_options(options: RunOptions, step_ids: Iterable[str]) -> RunOptions:
    """`options` with every time limit of `step_ids` TIMEOUT_MARGIN times as long."""
    step_limits = dict(options.step_limits)
    for sid in step_ids:
        base = options.step_limits.get(sid, options.limits)
        call = base.call_timeout or resolve_step(sid).timeout or DEFAULT_CALL_TIMEOUT
        step_limits[sid] = _wider(base, call)
    return replace(options, step_limits=step_limits, persist_examples=False,
                   limits=_wider(options.limits, options.limits.call_timeout or DEFAULT_CALL_TIMEOUT))


def confirm(options: RunOptions, graded: list[tuple[Path, GradeReport]]) -> list[GradeReport]:
    """Each report, marked `timeout_confirmed` when its timed-out steps time out again with the margin.

    `graded`: (the folder that was graded, its fresh report). Reports without
    a timeout, or with a grader failure, come back unchanged.
    """
    todo = [i for i, (_, r) in enumerate(graded) if timed_out_steps(r) and not r.grader_failed]
    out = [r for _, r in graded]
    if not todo:
        return out
    steps = sorted({sid for i in todo for sid in timed_out_steps(graded[i][1])})
    with Engine(margin_options(options, steps)) as engine:
        for i in todo:
            path, report = graded[i]
            ids = timed_out_steps(report)
            again = engine.grade(path, [resolve_step(s) for s in ids], label=report.submission)
            if not again.grader_failed and set(timed_out_steps(again)) >= set(ids):
                out[i] = replace(report, extra={**report.extra, "timeout_confirmed": True})
    return out


__all__ = ["confirm", "margin_options", "timed_out_steps"]
