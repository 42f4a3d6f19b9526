"""`check` for a learner: grade workspace steps with the engine, then record progress."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

from .catalog import Exercise, load_catalog
from .engine import Engine, RunOptions
from .results import GradeReport
from .workspace import State, Workspace


@dataclass
class CheckOutcome:
    report: GradeReport
    state: State
    next_step: Exercise | None  # what to do after this check
    hints_total: dict[str, int]


def run_check(ws: Workspace, steps: Sequence[Exercise], state: State, *,
              reference_steps: bool = False, options: RunOptions | None = None) -> CheckOutcome:
    options = options or RunOptions(reference_steps=reference_steps)
    with Engine(options) as engine:
        report = engine.grade(ws.root, steps, label=str(ws.root))
    now = _dt.datetime.now().isoformat(timespec="seconds")
    for s in report.steps:
        st = state.step(s.id)
        st.attempts += 1
        if s.passed:
            if st.status != "passed":
                st.passed_at = now
            st.status = "passed"
        else:
            st.status = "failed"
    ws.save_state(state)
    catalog = load_catalog()
    todo = [e for e in catalog if state.step(e.id).status != "passed"]
    return CheckOutcome(report, state, todo[0] if todo else None, {e.id: len(e.hints) for e in catalog})
