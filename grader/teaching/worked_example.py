"""The lesson's worked example, computed by the learner's own code, stage by stage.

q = [1, 0, 1, 0] against three keys and values (CONTRACT §2) goes through
`dot_scores`, `scale_scores`, `softmax` and `weighted_sum` (steps 1-4), each
fed the learner's previous answer, and through `attention` (step 5) in one
go. Beside each stage stand the lesson's numbers, so a learner sees where
their numbers first part from it. Learner code runs in the sandbox only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_practice.grader.catalog import Exercise, resolve_step
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.sandbox.learner import Learner, LearnerError, Limits
from attn_practice.reference import attention as reference

if TYPE_CHECKING:
    from rich.console import Console

    from attn_practice.grader.teaching.practice import CheckOutcome

Q = np.array([[1.0, 0.0, 1.0, 0.0]])
K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])
D_K = 4
#: the steps the worked example runs through, in order
STEPS = ("step1", "step2", "step3", "step4", "step5")


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


def _expected() -> dict[str, np.ndarray]:
    scores = reference.dot_scores(Q, K)
    scaled = reference.scale_scores(scores, D_K)
    weights = reference.softmax(scaled, axis=-1)
    output = reference.weighted_sum(weights, V)
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": output,
            "attention": reference.attention(Q, K, V)}


def worked_example_rows(
    workspace_root: Path,
    launcher: Launcher,
    *,
    steps: Iterable[str] = STEPS,
    files: dict[str, bytes] | None = None,
    limits: Limits | None = None,
    shims: dict[str, str] | None = None,
) -> list[Row]:
    """Run the worked example through the learner's `steps` (ids among step1-5) in the sandbox.

    Stages 1-4 are chained: each gets the learner's previous answer, or the
    lesson's numbers when that stage was not run or gave no usable answer.
    `files` grades in-memory sources instead of `workspace_root` (notebooks).
    """
    wanted = {resolve_step(s).id for s in steps}
    exp = _expected()
    limits = limits or Limits()
    rows: list[Row] = []
    carry: dict[str, np.ndarray] = dict(exp)  # the input each stage is fed

    plan = (
        ("scores", "step1", "dot_scores(q, K)", lambda: (Q, K)),
        ("scaled", "step2", f"scale_scores(scores, {D_K})", lambda: (carry["scores"], D_K)),
        ("weights", "step3", "softmax(scaled)", lambda: (carry["scaled"],)),
        ("output", "step4", "weighted_sum(weights, V)", lambda: (carry["weights"], V)),
        ("attention", "step5", "attention(q, K, V)", lambda: (Q, K, V)),
    )
    for stage, step_id, call, args in plan:
        if step_id not in wanted:
            continue
        ex = resolve_step(step_id)
        inputs = args()
        if files is None and not (Path(workspace_root) / ex.file).is_file():
            got, problem = None, f"no {ex.file}"
        else:
            got, problem = _run(launcher, workspace_root, ex, inputs, files=files, limits=limits,
                                shims=shims)
        expected = exp[stage]
        ok = inherited = False
        if got is not None:
            if got.shape != expected.shape:
                problem = f"shape {got.shape}, expected {expected.shape}"
            else:
                tol = ex.tolerance("float64")
                ok = bool(np.allclose(got, expected, rtol=tol.rtol, atol=tol.atol))
                if not ok:
                    right = np.asarray(reference.FUNCTIONS[ex.function](*inputs), dtype=np.float64)
                    inherited = bool(np.allclose(got, right, rtol=tol.rtol, atol=tol.atol))
            if got.shape == expected.shape and np.all(np.isfinite(got)):
                carry[stage] = got
        pending = got is None and (problem == "not written yet" or problem.startswith("no step"))
        rows.append(Row(stage, step_id, call, expected, got, ok, problem, inherited=inherited,
                        pending=pending))
    return _mark_first(rows)


def _mark_first(rows: list[Row]) -> list[Row]:
    out, marked = [], False
    for r in rows:
        if not r.ok and not r.pending and not marked:
            marked = True
            r = replace(r, first_divergence=True)
        out.append(r)
    return out


def _run(launcher: Launcher, root: Path, ex: Exercise, args: Sequence[Any], *,
         files: dict[str, bytes] | None, limits: Limits,
         shims: dict[str, str] | None) -> tuple[np.ndarray | None, str]:
    learner = Learner(launcher, Path(root), step_id=ex.id, module=ex.module, function=ex.function,
                      params=ex.params, limits=limits, files=files, shims=shims)
    try:
        return np.asarray(learner(*args), dtype=np.float64), ""
    except LearnerError as exc:
        return None, _problem(exc, ex)
    finally:
        learner.close()


def _problem(exc: LearnerError, ex: Exercise) -> str:
    """A few words on why a stage gave no answer (the check report has the details)."""
    kind = exc.failure.kind
    if exc.kind == "not-implemented" or kind == "not-implemented":
        return "not written yet"
    if kind == "syntax":
        return f"syntax error in {ex.file}"
    if kind == "missing-function":
        return f"no {ex.function} in {ex.file}"
    if exc.kind == "load":
        return f"{ex.file} could not be loaded"
    if kind == "timeout":
        return "timed out"
    return _short(exc.failure.summary, 48)


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_divergence(rows: Sequence[Row]) -> str | None:
    """The first stage whose numbers differ from the lesson's (None: all agree)."""
    for r in rows:
        if r.first_divergence:
            return r.stage
    return None


# ------------------------------------------------------------------ rendering
def fmt(a: np.ndarray | None, places: int = 3) -> str:
    """Short numbers: [0.506, 0.186, 0.307] (a single query row is shown flat)."""
    if a is None:
        return "—"
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.size > 12:
        return f"<shape {a.shape}>"
    if a.ndim > 1:
        return "[" + ", ".join(fmt(r, places) for r in a) + "]"

    def one(x: float) -> str:
        text = f"{x:.{places}f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text

    return "[" + ", ".join(one(x) for x in a) + "]"


def render_worked_example(console: Console, rows: Sequence[Row]) -> None:
    """The worked example as a table: stage, the lesson's numbers, yours, where they first differ."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold", padding=(0, 2, 0, 0))
    table.add_column("stage", no_wrap=True)
    table.add_column("lesson", no_wrap=True)
    table.add_column("yours")
    table.add_column("", no_wrap=True)
    for r in rows:
        if r.ok:
            mark = Text("✓", style="green")
        elif r.pending:
            mark = Text("·", style="dim")
        elif r.first_divergence:
            mark = Text("✗ first difference", style="bold red")
        elif r.inherited:
            mark = Text("✗ from above", style="yellow")
        else:
            mark = Text("✗", style="red")
        if r.got is None:
            got = Text(r.problem, style="dim" if r.pending else "red")
        elif r.problem:
            got = Text(f"{fmt(r.got)} ({r.problem})", style="red")
        else:
            got = Text(fmt(r.got), style="green" if r.ok else "red")
        table.add_row(f"{r.step.removeprefix('step')} {r.stage}", fmt(r.expected), got, mark)
    calls = " → ".join(r.call for r in rows if r.stage != "attention")
    lines: list = [Text("q = [1, 0, 1, 0]   K = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]]\n"
                        "V = [[10, 0], [0, 5], [2, 2]]   d_k = 4", style="dim"), table]
    chained = [r for r in rows if r.stage != "attention"]
    if len(chained) > 1:
        lines.append(Text(f"each stage gets your previous answer: {calls}", style="dim"))
    stage = first_divergence(rows)
    if stage is None and any(r.ok for r in rows):
        lines.append(Text("Your code reproduces the lesson's numbers at every stage it ran.",
                          style="green"))
    elif stage is None:
        lines.append(Text("Nothing to compare yet: write the function, save, and check again.",
                          style="dim"))
    else:
        row = next(r for r in rows if r.stage == stage)
        lines.append(Text.assemble("Your numbers first differ at ", (stage, "bold"),
                                   f" ({row.step}, {row.call}). Work that stage out by hand "
                                   "from the lesson's numbers above it."))
    console.print(Panel(Group(*lines), title="the lesson's worked example, computed by your code",
                        title_align="left", border_style="blue", expand=False))


# ------------------------------------------------------------------ check hook
def worked_example_steps(outcome: CheckOutcome) -> list[str]:
    """The stages worth showing after a check: steps 1..N where N is the first failed step of 1-5.

    Empty when every checked step of 1-5 passed or was missing (nothing to compare).
    """
    from attn_practice.grader.results import Status

    failed = [s for s in outcome.report.steps
              if s.id in STEPS and s.status not in (Status.PASSED, Status.MISSING)]
    if not failed:
        return []
    last = failed[0].id
    return list(STEPS[: STEPS.index(last) + 1])


def render_check_worked_example(console: Console, outcome: CheckOutcome,
                                launcher: Launcher | None = None) -> None:
    """The hook for `render_check`: after a failed check of a step 1-5, show the worked example.

    Never raises: the panel is a teaching aid, not part of the grade.
    """
    steps = worked_example_steps(outcome)
    if not steps:
        return
    own = launcher is None
    launcher = launcher or Launcher()
    try:
        rows = worked_example_rows(Path(outcome.report.submission), launcher, steps=steps)
    except Exception:  # noqa: BLE001 - a teaching aid must never break `check`
        return
    finally:
        if own:
            launcher.close()
    if all(r.pending for r in rows):
        return  # nothing written yet: nothing to compare
    render_worked_example(console, rows)


__all__ = ["Row", "first_divergence", "render_check_worked_example", "render_worked_example",
           "worked_example_rows", "worked_example_steps"]
