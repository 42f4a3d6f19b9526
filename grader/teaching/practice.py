"""`check` for a learner: grade workspace steps with the engine, then record progress."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.teaching.workspace import STATE_FILE, State, Workspace


@dataclass
class CheckOutcome:
    report: GradeReport
    state: State
    next_step: Exercise | None  # what to do after this check
    hints_total: dict[str, int]
    warnings: list[str] = field(default_factory=list)  # e.g. progress could not be saved
    #: the engine's sandbox launcher while it is open (inside `run_check(then=...)`), else None
    launcher: Launcher | None = field(default=None, repr=False, compare=False)


def first_unpassed(state: State, catalog: Sequence[Exercise] | None = None) -> Exercise | None:
    """The first step (core, then bonus) that has not passed yet; None when all have."""
    for e in catalog or load_catalog():
        if state.step(e.id).status != "passed":
            return e
    return None


def record(state: State, report: GradeReport, when: str | None = None) -> None:
    """Write a check's results into `state`: attempts, status, when first passed."""
    now = when or _dt.datetime.now().isoformat(timespec="seconds")
    for s in report.steps:
        st = state.step(s.id)
        st.attempts += 1
        if s.passed:
            if st.status != "passed":
                st.passed_at = now
            st.status = "passed"
        else:  # the latest check decides; `passed_at` remembers that it passed once
            st.status = "failed"


def check_options(state: State, steps: Sequence[Exercise], *, reference_steps: bool = False) -> RunOptions:
    """Engine options for a learner's check: what the state says of the steps not checked now."""
    checked = {e.id for e in steps}
    return RunOptions(
        reference_steps=reference_steps,
        known_failing=frozenset(sid for sid, st in state.steps.items()
                                if st.status == "failed" and sid not in checked),
        known_unchecked=frozenset(sid for sid, st in state.steps.items()
                                  if st.status == "not started" and sid not in checked),
        speed_notes=True,
    )


def run_check(ws: Workspace, steps: Sequence[Exercise], state: State, *,
              reference_steps: bool = False, options: RunOptions | None = None,
              engine: Engine | None = None,
              then: Callable[[CheckOutcome], None] | None = None) -> CheckOutcome:
    """Grade `steps` of the workspace, then save progress (re-read under a lock first).

    `engine` lets a caller that checks many times (tests, `watch`) keep one warm.
    `then(outcome)` runs before the engine is closed, so a renderer can still use
    `outcome.launcher` (the worked example runs the learner's code through it).
    """
    if engine is not None:
        # A warm engine (watch, tests) still needs this check's view of the other steps.
        fresh = check_options(state, steps)
        engine.options = replace(engine.options, known_failing=fresh.known_failing,
                                 known_unchecked=fresh.known_unchecked)
    options = options or check_options(state, steps, reference_steps=reference_steps)
    if engine is None:
        with Engine(options) as own:
            outcome = _grade_and_record(ws, steps, state, own, then)
        outcome.launcher = None  # closed with the engine
        return outcome
    return _grade_and_record(ws, steps, state, engine, then)


def _grade_and_record(ws: Workspace, steps: Sequence[Exercise], state: State, engine: Engine,
                      then: Callable[[CheckOutcome], None] | None) -> CheckOutcome:
    report = engine.grade(ws.root, steps, label=str(ws.root))
    warnings: list[str] = []
    catalog = load_catalog()
    try:
        state = ws.update_state(lambda st: record(st, report), catalog)
    except OSError as exc:
        record(state, report)
        warnings.append(f"your progress could not be saved to {STATE_FILE} "
                        f"({exc.strerror or exc}); the result above still stands.")
    outcome = CheckOutcome(report, state, first_unpassed(state, catalog),
                           {e.id: len(e.hints) for e in catalog}, warnings, engine.launcher)
    if then is not None:
        then(outcome)  # e.g. render, while the engine's sandbox launcher is still warm
    return outcome
