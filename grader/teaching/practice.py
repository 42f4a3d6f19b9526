"""`check` for a learner: grade workspace steps with the engine, then record progress.

The data path of one check: `run_check` asks the engine for a `GradeReport`,
points each failure at the step file that caused it (`blame`), computes the
worked-example rows through the same engine's sandboxes, records progress in
the state file, and returns all of it as one plain `CheckOutcome` for the
screens to draw. Nothing after `run_check` starts a sandbox.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Sequence
from dataclasses import replace

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport, StepResult, TestResult
from attn_practice.grader.teaching.outcome import Blame, CheckOutcome, Why
from attn_practice.grader.teaching.worked_example import rows_after_check
from attn_practice.grader.teaching.workspace import (
    STATE_FILE,
    Progress,
    State,
    Workspace,
    changed_since_check,
)


def first_unpassed(state: State, catalog: Sequence[Exercise] | None = None) -> Exercise | None:
    """The first step (core, then bonus) that has not passed yet; None when all have."""
    for e in catalog or load_catalog():
        if not state.step(e.id).passed:
            return e
    return None


def record(state: State, report: GradeReport, when: str | None = None,
           ws: Workspace | None = None, checked: dict[str, str] | None = None, *,
           attempt: bool = True) -> None:
    """Write a check's results into `state`: attempts, status, when first passed.

    With `ws`, a pass also remembers the fingerprints of the step files it
    imports, so `status` can tell when one of them changed afterwards.
    `checked` holds the fingerprint of each step file as it was graded, so a
    later change shows the status as stale; `attempt=False` records a step
    graded only because a checked step imports it.
    """
    now = when or _dt.datetime.now().isoformat(timespec="seconds")
    by_id = {e.id: e for e in load_catalog()}
    for s in report.steps:
        st = state.step(s.id)
        if attempt:
            st.attempts += 1
        if checked is not None and s.id in checked:
            st.checked = checked[s.id]
        elif ws is not None and s.id in by_id:
            st.checked = ws.fingerprint(by_id[s.id].file)
        if s.passed:
            if not st.passed:
                st.passed_at = now
            st.status = Progress.PASSED
            ex = by_id.get(s.id)
            st.passed_with = ({d.file: ws.fingerprint(d.file) for d in ws.imported_steps(ex)}
                              if ws is not None and ex is not None else {})
        else:  # the latest check decides; `passed_at` remembers that it passed once
            st.status = Progress.FAILED
            st.passed_with = {}


def check_options(state: State, steps: Sequence[Exercise], *, reference_steps: bool = False) -> RunOptions:
    """Engine options for a learner's check: what the state says of the steps not checked now."""
    checked = {e.id for e in steps}
    return RunOptions(
        reference_steps=reference_steps,
        known_failing=frozenset(sid for sid, st in state.steps.items()
                                if st.status is Progress.FAILED and sid not in checked),
        known_unchecked=frozenset(sid for sid, st in state.steps.items()
                                  if st.status is Progress.NOT_STARTED and sid not in checked),
        speed_notes=True,
    )


def run_check(ws: Workspace, steps: Sequence[Exercise], state: State, *,
              reference_steps: bool = False, options: RunOptions | None = None,
              engine: Engine | None = None) -> CheckOutcome:
    """Grade `steps` of the workspace, then save progress (re-read under a lock first).

    `engine` lets a caller that checks many times (tests, `watch`, the web
    lesson) keep one warm; it is left open.
    """
    if engine is not None:
        # A warm engine (watch, tests) still needs this check's view of the other steps.
        fresh = check_options(state, steps, reference_steps=reference_steps)
        engine.options = replace(engine.options, known_failing=fresh.known_failing,
                                 known_unchecked=fresh.known_unchecked,
                                 reference_steps=reference_steps or engine.options.reference_steps)
        return _grade_and_record(ws, steps, state, engine)
    options = options or check_options(state, steps, reference_steps=reference_steps)
    with Engine(options) as own:
        return _grade_and_record(ws, steps, state, own)


def _grade_and_record(ws: Workspace, steps: Sequence[Exercise], state: State,
                      engine: Engine) -> CheckOutcome:
    catalog = load_catalog()
    if not engine.options.reference_steps:
        state = check_imports_first(ws, steps, state, engine, catalog)
    checked = {e.id: ws.fingerprint(e.file) for e in steps}  # before grading: what is graded
    report = engine.grade(ws.root, steps, label=str(ws.root))
    report, blames = blame(ws, report, state, catalog)
    rows = () if engine.options.reference_steps else rows_after_check(report, ws.root, engine.launcher)
    warnings: list[str] = []
    try:
        state = ws.update_state(lambda st: record(st, report, ws=ws, checked=checked), catalog)
    except OSError as exc:
        record(state, report, ws=ws, checked=checked)
        warnings.append(f"your progress could not be saved to {STATE_FILE} "
                        f"({exc.strerror or exc}); the result above still stands.")
    return CheckOutcome(report, state, first_unpassed(state, catalog),
                        {e.id: len(e.hints) for e in catalog}, warnings, rows, blames)


# ------------------------------------------------------------------ imported steps first
def imports_of(ws: Workspace, steps: Sequence[Exercise],
               catalog: Sequence[Exercise]) -> list[Exercise]:
    """The earlier steps the checked steps import, directly or through each other, in step order."""
    wanted = {e.id for e in steps}
    found: dict[str, Exercise] = {}
    todo = list(steps)
    while todo:
        ex = todo.pop()
        for dep in ws.imported_steps(ex, catalog):
            if dep.id not in wanted and dep.id not in found:
                found[dep.id] = dep
                todo.append(dep)
    return sorted(found.values(), key=lambda e: e.number)


def _is_stub(ws: Workspace, ex: Exercise) -> bool:
    """Still the untouched stub: its NotImplementedError already names it when it is called."""
    try:
        return ws.file_for(ex).read_text(encoding="utf-8") == ex.stub_source()
    except (OSError, UnicodeDecodeError):
        return False


def check_imports_first(ws: Workspace, steps: Sequence[Exercise], state: State, engine: Engine,
                        catalog: Sequence[Exercise]) -> State:
    """Grade the imported steps whose files changed since their last check; the state after.

    The state file is the cache: a step whose file still has the fingerprint
    it was last checked with keeps that result, so only a changed (or never
    checked) imported step costs a run. Its result is recorded like a check
    (status and fingerprint, no attempt counted), so `blame` can say on the
    first check that step 5 fails because the step 3 it imports fails.
    """
    deps = imports_of(ws, steps, catalog)
    stale = [d for d in deps if not _is_stub(ws, d) and (
        state.step(d.id).status is Progress.NOT_STARTED or changed_since_check(ws, state, d))]
    if not stale:
        return state
    checked = {e.id: ws.fingerprint(e.file) for e in stale}
    options = engine.options
    try:
        report = engine.grade(ws.root, stale, label=str(ws.root))
    finally:
        engine.options = options
    try:
        state = ws.update_state(
            lambda st: record(st, report, ws=ws, checked=checked, attempt=False), catalog)
    except OSError:
        record(state, report, ws=ws, checked=checked, attempt=False)
    failing = {s.id for s in report.steps if not s.passed}
    engine.options = replace(engine.options, known_failing=engine.options.known_failing | failing,
                             known_unchecked=engine.options.known_unchecked - {s.id for s in report.steps})
    return state


# ------------------------------------------------------------------ blame
_FILE_RE = re.compile(r'File "([^"]+)"')


def raised_in(step: StepResult, catalog: Sequence[Exercise]) -> Exercise | None:
    """The other step whose file the first failure's traceback ends in, if any."""
    for t in step.tests:
        f = t.failure
        if f is None or not f.traceback:
            continue
        files = [os.path.basename(m) for m in _FILE_RE.findall(f.traceback)]
        if not files:
            continue
        last = files[-1]
        if last == step.file:
            return None
        return next((ex for ex in catalog if ex.file == last), None)
    return None


def blame(ws: Workspace, report: GradeReport, state: State,
          catalog: Sequence[Exercise]) -> tuple[GradeReport, dict[str, Blame]]:
    """Point each failing step at the earlier step file that makes it fail.

    An error raised inside an imported step's file blames that step (and a
    "not written yet" headline names its function, not the step checked);
    otherwise a failing step that imports a step which fails now, or failed
    at its last check, blames that one.
    """
    by_id = {e.id: e for e in catalog}
    failing_now = {s.id for s in report.steps if not s.passed}
    blames: dict[str, Blame] = {}
    steps = []
    for s in report.steps:
        ex = by_id.get(s.id)
        if s.passed or ex is None:
            steps.append(s)
            continue
        cause = raised_in(s, catalog)
        if cause is not None:
            named = _name_the_cause(s, cause)
            why = Why.NOT_WRITTEN if named is not s else Why.RAISED
            blames[s.id] = Blame(s.id, cause.id, why)
            s = named
        else:
            deps = imports_of(ws, [ex], catalog)
            bad = [d for d in deps
                   if d.id in failing_now or state.step(d.id).status is Progress.FAILED]
            unsure = [d for d in deps if state.step(d.id).status is Progress.NOT_STARTED]
            if bad:
                blames[s.id] = Blame(s.id, bad[0].id, Why.FAILS)
            elif unsure:
                blames[s.id] = Blame(s.id, unsure[0].id, Why.UNCHECKED)
        steps.append(s)
    return replace(report, steps=tuple(steps)), blames


def _name_the_cause(step: StepResult, cause: Exercise) -> StepResult:
    """Make a "not written yet" headline true: it is `cause`'s function that is a stub."""
    def fix(t: TestResult) -> TestResult:
        f = t.failure
        if f is None or f.kind != "not-implemented":
            return t
        summary = (f"{cause.function} in {cause.file} is not written yet (your {step.function} "
                   "calls it): it still raises NotImplementedError")
        hint = (f"Write {cause.function} in {cause.file} first, or check {step.id} on its own "
                "with the reference versions of the earlier steps (see \"What now\" below).")
        return replace(t, message=summary, failure=replace(f, summary=summary, hint=hint))

    tests = tuple(fix(t) for t in step.tests)
    if tests == step.tests:
        return step
    error = tests[0].message if step.error and len(tests) == 1 else step.error
    return replace(step, tests=tests, error=error)


__all__ = ["Blame", "CheckOutcome", "Why", "blame", "check_options", "first_unpassed", "raised_in",
           "record", "run_check"]
