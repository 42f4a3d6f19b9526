"""What one `check` hands to the screens: plain data, no live resources.

Kept apart from `practice` (which imports the engine, pytest and Hypothesis)
so that the screens, `watch` and the web lesson can name these types cheaply.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.results import GradeReport
from attn_practice.grader.teaching.workspace import State


@dataclass(frozen=True)
class Row:
    """One stage of the worked example: what the lesson says, what the learner's code gave."""

    stage: str  # "scores" | "scaled" | "weights" | "output" | "attention"
    step: str  # the step whose function computed it
    call: str  # how it was called, e.g. "scale_scores(scores, 4)"
    expected: np.ndarray
    got: np.ndarray | None  # None when the code gave no usable answer (see `problem`)
    ok: bool
    problem: str = ""  # why `got` is missing or has the wrong shape
    first_divergence: bool = False
    #: wrong only because it was fed an earlier stage's wrong answer (this stage itself is right)
    inherited: bool = False
    #: not attempted yet (stub still raises NotImplementedError, or no file): not a divergence
    pending: bool = False
    #: the step's file did not load (syntax error, failing import, no such function)
    unloaded: bool = False


class Why(enum.Enum):
    """How we know an imported step is behind a failure."""

    RAISED = "raised"  # the error was raised inside the imported step's file
    NOT_WRITTEN = "not written"  # ... and it was that step's stub (NotImplementedError)
    FAILS = "fails"  # the imported step fails now, or failed at its last check
    UNCHECKED = "unchecked"  # the imported step has never been checked


@dataclass(frozen=True)
class Blame:
    """A failing step whose cause lies (or may lie) in an earlier step file it imports."""

    step: str  # the step that failed, e.g. "step5"
    cause: str  # the step whose file is at fault, e.g. "step3"
    why: Why


@dataclass
class CheckOutcome:
    """Everything a screen needs to draw a check: plain data, no live resources."""

    report: GradeReport
    state: State
    next_step: Exercise | None  # what to do after this check
    hints_total: dict[str, int]
    warnings: list[str] = field(default_factory=list)  # e.g. progress could not be saved
    #: the lesson's worked example through the learner's code (empty: nothing to show)
    worked_example: tuple[Row, ...] = ()
    #: step id -> the earlier step that makes it fail
    blame: dict[str, Blame] = field(default_factory=dict)


def fmt(a: np.ndarray | None, places: int = 3) -> str:
    """Short numbers for a row, on any screen (terminal or page): [0.506, 0.186, 0.307] (a single query row is shown flat)."""
    if a is None:
        return "—"
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]

    def one(x: float) -> str:
        text = f"{x:.{places}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text

    if a.size > 12:
        return f"<shape {a.shape}>"
    if a.ndim > 1:
        return "[" + ", ".join(fmt(r, places) for r in a) + "]"
    if a.ndim == 0:  # a learner's function that returned a single number
        return one(float(a))
    return "[" + ", ".join(one(x) for x in a) + "]"


__all__ = ["Blame", "CheckOutcome", "Row", "Why", "fmt"]
