"""The lesson's worked example, computed by the learner's own code, stage by stage.

q = [1, 0, 1, 0] against three keys and values (CONTRACT §2; the numbers
live in exercises/data/worked_example.yaml) goes through
`dot_scores`, `scale_scores`, `softmax` and `weighted_sum` (steps 1-4), each
fed the learner's previous answer, and through `attention` (step 5) in one
go. Beside each stage stand the lesson's numbers, so a learner sees where
their numbers first part from it. Learner code runs in the sandbox only.

Computation only: the rows are plain data (carried on `CheckOutcome`), and
`screens.render_worked_example` draws them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from attn_practice.exercises.lesson_data import worked_example
from attn_practice.grader.catalog import Exercise, resolve_step
from attn_practice.grader.results import GradeReport, Status
from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner, LearnerError, LoadError
from attn_practice.grader.sandbox.shared import SharedSandbox
from attn_practice.grader.teaching.outcome import Row
from attn_practice.reference import attention as reference

_EXAMPLE = worked_example()
Q, K, V, D_K = _EXAMPLE.Q, _EXAMPLE.keys, _EXAMPLE.values, _EXAMPLE.d_k
#: the steps the worked example runs through, in order
STEPS = ("step1", "step2", "step3", "step4", "step5")


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
    timed_out: frozenset[str] = frozenset(),
    shared: bool = True,
    box: SharedSandbox | None = None,
    failed_alone: frozenset[str] = frozenset(),
) -> list[Row]:
    """Run the worked example through the learner's `steps` (ids among step1-5) in the sandbox.

    Stages 1-4 are chained: each gets the learner's previous answer, or the
    lesson's numbers when that stage was not run or gave no usable answer.
    `files` grades in-memory sources instead of `workspace_root` (notebooks).
    `timed_out`: steps the check already stopped for time; not run again (one
    timeout per step, so a check with an endless loop stops in one call's limit).

    `shared`: the steps load into one sandbox (`sandbox.shared`), not one each in
    turn (a failed check of step 5 started five). What one step's code does to
    that interpreter could reach another's numbers, so the stage marked as the
    first to depart is computed again in a sandbox of its own, and when it does
    not come out the same there, every stage is (the panel then is as before).
    `box`: a shared sandbox of the caller's to use (and leave open), e.g. the one a
    hosted check's widgets are computed in next (`host.checks.widget_work`).
    `failed_alone`: steps the check just failed in sandboxes of their own; a first
    departure at one of them needs no second opinion.
    """
    wanted = tuple(s for s in STEPS if s in {resolve_step(x).id for x in steps})
    limits = limits or Limits()
    own = box is None
    if own:
        box = (SharedSandbox(launcher, Path(workspace_root), limits=limits, files=files)
               if shared and not shims and len(wanted) > 1 else None)
    try:
        rows, inputs = _rows(launcher, workspace_root, wanted, files=files, limits=limits, shims=shims,
                             timed_out=timed_out, shared=box)
    finally:
        if box is not None and own:
            box.close()
    first = next((r.step for r in rows if r.first_divergence), None)
    if (box is not None and first not in failed_alone
            and not _confirmed(rows, inputs, launcher, workspace_root, files, limits)):
        rows, _ = _rows(launcher, workspace_root, wanted, files=files, limits=limits, shims=shims,
                        timed_out=timed_out, shared=None)
    return rows


def _rows(launcher: Launcher, workspace_root: Path, wanted: Sequence[str], *,
          files: dict[str, bytes] | None, limits: Limits, shims: dict[str, str] | None,
          timed_out: frozenset[str], shared: SharedSandbox | None,
          ) -> tuple[list[Row], dict[str, tuple[Any, ...]]]:
    """The rows, and the input each stage was fed (to compute one again alone)."""
    exp = _expected()
    rows: list[Row] = []
    fed: dict[str, tuple[Any, ...]] = {}
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
        inputs = fed[stage] = args()
        unloaded = False
        if files is None and not (Path(workspace_root) / ex.file).is_file():
            got, problem = None, f"no {ex.file}"
        elif step_id in timed_out:
            got, problem = None, "timed out"
        else:
            got, problem, unloaded = _run(launcher, workspace_root, ex, inputs, files=files,
                                          limits=limits, shims=shims, shared=shared)
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
                        pending=pending, unloaded=unloaded))
    return _mark_first(rows), fed


def _confirmed(rows: Sequence[Row], fed: dict[str, tuple[Any, ...]], launcher: Launcher,
               workspace_root: Path, files: dict[str, bytes] | None, limits: Limits) -> bool:
    """Whether the stage marked first to depart gives the same in a sandbox of its own."""
    first = next((r for r in rows if r.first_divergence), None)
    if first is None or first.stage not in fed:
        return True
    ex = resolve_step(first.step)
    got, problem, unloaded = _run(launcher, workspace_root, ex, fed[first.stage], files=files,
                                  limits=limits, shims=None, shared=None)
    if got is None or first.got is None:
        return got is None and first.got is None and (problem, unloaded) == (first.problem, first.unloaded)
    tol = ex.tolerance("float64")
    return got.shape == first.got.shape and bool(np.allclose(got, first.got, rtol=tol.rtol, atol=tol.atol,
                                                             equal_nan=True))


def _mark_first(rows: list[Row]) -> list[Row]:
    out, marked = [], False
    for r in rows:
        if not r.ok and not r.pending and not marked:
            marked = True
            r = replace(r, first_divergence=True)
        out.append(r)
    return out


def _run(launcher: Launcher, root: Path, ex: Exercise, args: Sequence[Any], *,
         files: dict[str, bytes] | None, limits: Limits, shims: dict[str, str] | None,
         shared: SharedSandbox | None = None) -> tuple[np.ndarray | None, str, bool]:
    """(the answer or None, why there is none, whether the file failed to load)."""
    learner = Learner(launcher, Path(root), step_id=ex.id, module=ex.module, function=ex.function,
                      params=ex.params, limits=limits, files=files, shims=shims, shared=shared)
    try:
        return np.asarray(learner(*args), dtype=np.float64), "", False
    except LearnerError as exc:
        exc.complete()
        unloaded = isinstance(exc, LoadError) or exc.kind == "load"
        return None, _problem(exc, ex), unloaded and exc.failure.kind != "not-implemented"
    except (TypeError, ValueError):  # an answer that is not an array of numbers
        return None, f"{ex.function} did not return an array of numbers", False
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


# ------------------------------------------------------------------ after a check
def worked_example_steps(report: GradeReport) -> list[str]:
    """The stages worth showing after a check: steps 1..N where N is the first failed step of 1-5.

    Empty when every checked step of 1-5 passed or was missing (nothing to compare).
    """
    failed = [s for s in report.steps
              if s.id in STEPS and s.status not in (Status.PASSED, Status.MISSING)]
    if not failed:
        return []
    last = failed[0].id
    return list(STEPS[: STEPS.index(last) + 1])


def rows_after_check(report: GradeReport, root: Path, launcher: Launcher, *,
                     files: dict[str, bytes] | None = None,
                     shims: dict[str, str] | None = None,
                     box: SharedSandbox | None = None) -> tuple[Row, ...]:
    """The worked-example rows a failed check shows (empty: nothing worth comparing).

    Called by the practice layer with the engine's launcher while the engine
    is open; the rows travel on the check's outcome to the screen. Never
    raises: the panel is a teaching aid, not part of the grade.
    """
    steps = worked_example_steps(report)
    if not steps:
        return ()
    try:
        stopped = frozenset(s.id for s in report.steps if s.status == "timeout")
        failed = frozenset(s.id for s in report.steps if s.status in (Status.FAILED, Status.ERROR))
        rows = worked_example_rows(root, launcher, steps=steps, files=files, shims=shims, timed_out=stopped,
                                   box=box, failed_alone=failed)
    except Exception:  # noqa: BLE001 - a teaching aid must never break `check`
        return ()
    if all(r.pending for r in rows):
        return ()  # nothing written yet: nothing to compare
    return tuple(rows)


__all__ = ["Row", "first_divergence", "rows_after_check", "worked_example_rows",
           "worked_example_steps"]
