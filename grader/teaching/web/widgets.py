"""The three widgets' numbers, stage by stage, by the learner's own functions (in the sandbox).

Each widget is a short chain of stages (scores -> scaled -> weights ->
output, plus attention in one go). Every stage is computed twice:

- on the learner's chain: the learner's own function, fed the learner's
  previous answer; when that function cannot give an answer on this input
  (not written yet, raises, wrong shape, non-finite numbers, does not load)
  the reference function stands in *on the same input*, and the stage says
  why;
- on the reference chain: the reference functions from the same inputs.

A stage whose numbers differ from the reference chain's carries both; the
first such stage is marked, as the worked example in `check` marks it. The
label is built from the stages, so it names exactly whose functions
computed the numbers on show (`label`), whatever the state file says.

`LearnerFunctions` keeps one sandboxed `Learner` per step, reloaded when the
file's content changes. `bridge` feeds the lesson's data and decides the
file versions; this module never reads the workspace.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attn_practice.grader.catalog import Exercise, resolve_step
from attn_practice.reference import attention as reference


class Source(str, enum.Enum):
    """Whose functions computed a widget's (or a stage's) numbers."""

    YOURS = "yours"
    MIXED = "mixed"
    REFERENCE = "reference"


#: compute(step_id, *args) -> (the learner's answer, "") or (None, why there is none)
Compute = Callable[..., tuple["np.ndarray | None", str]]
SCALE_TRIALS = 100
SCALE_KEYS = 8
#: calls before a widget sandbox is replaced by a fresh one: its CPU-time limit is per process,
#: and a learner may drag a slider for hours
RECYCLE_AFTER = 500


class LearnerFunctions:
    """The learner's step functions, each in its own sandbox, kept warm between calls."""

    def __init__(self, root: Path, *, launcher: Any = None, files: dict[str, bytes] | None = None,
                 limits: Any = None, shared: bool = False):
        """`launcher`, when given, is borrowed (a check worker's; `close` leaves it open);
        `files` hands the sandbox the step files' bytes instead of reading `root` (hosted).

        `shared`: the steps load into one sandbox (`sandbox.shared`), not one each: for
        files that never change under this object (a hosted learner's file set, keyed by
        its hash), where five sandboxes per new file set were most of a lab's CPU (issue 40).
        A step whose code breaks that sandbox goes on in one of its own. Not for `serve`,
        whose steps are reloaded one at a time as their files change.
        """
        self.root = root
        self._launcher: Any = launcher
        self._borrowed = launcher is not None
        self._files = files
        self._limits = limits
        self._share = shared
        self._shared: Any = None
        self._learners: dict[str, tuple[Any, Any]] = {}
        self._calls: dict[str, int] = {}
        self.closed = False

    def _learner(self, ex: Exercise, sig: Any) -> Any:
        from attn_practice.grader.sandbox.launcher import Launcher, Limits
        from attn_practice.grader.sandbox.learner import Learner

        if self.closed:
            raise RuntimeError("the server is stopping")
        cached = self._learners.get(ex.id)
        if cached is not None and cached[0] == sig:
            self._calls[ex.id] = self._calls.get(ex.id, 0) + 1
            if self._calls[ex.id] <= RECYCLE_AFTER:
                return cached[1]
        if cached is not None:
            cached[1].close()
        self._calls[ex.id] = 0
        if self._launcher is None:
            self._launcher = Launcher()
        # each call's limit on the sandbox's CPU clock: a call kept waiting by a busy machine
        # is not labelled "your function timed out" (an endless loop still is, soon)
        limits = self._limits or Limits(cpu_clock=True)
        if self._share and self._shared is None:
            from attn_practice.grader.sandbox.shared import SharedSandbox

            self._shared = SharedSandbox(self._launcher, self.root, limits=limits,
                                         files=self._files)
        learner = Learner(self._launcher, self.root, step_id=ex.id, module=ex.module,
                          function=ex.function, params=ex.params, limits=limits,
                          files=self._files, shared=self._shared)
        self._learners[ex.id] = (sig, learner)
        return learner

    def warm(self) -> None:
        """Start the widgets' fork server now (it imports NumPy once), not on the first slider move."""
        from attn_practice.grader.sandbox.launcher import Launcher

        if self._launcher is None and not self.closed:
            self._launcher = Launcher()
            self._launcher.warm()
            self._launcher.info()  # answered once the zygote is ready

    def prepare(self, steps: Sequence[tuple[Exercise, Any]]) -> None:
        """Start the sandboxes of new code side by side (each imports while the others do)."""
        fresh = []
        for ex, sig in steps:
            cached = self._learners.get(ex.id)
            if cached is None or cached[0] != sig:
                try:
                    fresh.append(self._learner(ex, sig))
                except RuntimeError:
                    return
        for learner in fresh:
            try:
                learner.begin_load()
            except Exception:  # noqa: BLE001 - a file that cannot load says so when it is called
                pass
        for learner in fresh:
            try:
                learner.load()
            except Exception:  # noqa: BLE001 - as above
                pass

    def __call__(self, ex: Exercise, sig: Any, *args: Any) -> tuple[np.ndarray | None, str]:
        """(the learner's answer, "") or (None, why it could not be used on this input).

        The sandbox is kept after a failure: the same file fails the same way
        (a stuck sandbox answers at once with its first failure), and a new
        version of the file gets a new sandbox.
        """
        from attn_practice.grader.sandbox.learner import LearnerError

        try:
            learner = self._learner(ex, sig)
            learner.learner_seconds = 0.0  # the step budget is per check, not per server lifetime
            got = np.asarray(learner(*args), dtype=np.float64)
        except LearnerError as exc:
            return None, _why(exc, ex)
        except (TypeError, ValueError):
            return None, f"your {ex.function} did not return an array of numbers"
        except (RuntimeError, OSError) as exc:
            return None, f"the sandbox failed ({exc})"
        if not np.all(np.isfinite(got)):
            return None, f"your {ex.function} returns non-finite numbers (inf or NaN) on this input"
        return got, ""

    def close(self) -> None:
        self.closed = True
        for _, learner in self._learners.values():
            learner.close()
        self._learners.clear()
        if self._shared is not None:
            self._shared.close()
            self._shared = None
        if self._launcher is not None and not self._borrowed:
            self._launcher.close()
            self._launcher = None


def _why(exc: Any, ex: Exercise) -> str:
    """A few words for the label: why the learner's function gave no answer here."""
    kind = str(getattr(exc.kind, "value", exc.kind))
    fkind = str(getattr(exc.failure.kind, "value", exc.failure.kind))
    if "not-implemented" in (kind, fkind):
        return f"your step {ex.number} is not written yet"
    if kind == "load":
        return f"{ex.file} does not load ({_short(exc.failure.summary, 100)})"
    if kind == "timeout":
        return f"your {ex.function} timed out on this input"
    return f"your step {ex.number} raises on this input ({_short(exc.failure.summary, 100)})"


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def by_reference(step: str | Exercise, *args: Any) -> tuple[np.ndarray | None, str]:
    """A `Compute` that is the reference itself (the learner's code is not asked)."""
    ex = step if isinstance(step, Exercise) else resolve_step(step)
    return np.asarray(reference.FUNCTIONS[ex.function](*args)), ""


# ------------------------------------------------------------------ stages
@dataclass(frozen=True)
class Stage:
    """One stage of a widget's chain, on the learner's side and on the reference's."""

    name: str  # "scores", "weights", ...
    step: str  # the step whose function computes it
    call: str  # e.g. "softmax(scaled)"
    value: np.ndarray  # what the widget shows (the learner's, or the reference on the learner's input)
    reference: np.ndarray  # the reference chain's value
    source: Source  # YOURS or REFERENCE
    why: str = ""  # why the reference stands in (empty when the learner's function answered)
    differs: bool = False  # value and reference differ
    inherited: bool = False  # differs only because an earlier stage fed it a different input
    first: bool = False  # the first stage that departs from the reference

    def to_dict(self, places: int = 4) -> dict[str, Any]:
        ex = resolve_step(self.step)
        out: dict[str, Any] = {
            "stage": self.name, "step": self.step, "number": ex.number, "function": ex.function,
            "call": self.call, "source": self.source.value, "why": self.why,
            "differs": self.differs, "inherited": self.inherited, "first": self.first}
        if self.value.size <= 64:
            out["value"] = np.round(self.value, places).tolist()
            out["reference"] = np.round(self.reference, places).tolist() if self.differs else None
        return out


Plan = Sequence[tuple[str, str, str, Callable[[dict[str, Any]], tuple[Any, ...]]]]


def run_stages(compute: Compute, plan: Plan, inputs: dict[str, Any]) -> list[Stage]:
    """Run `plan` (name, step id, call, args from the chain so far) on both chains."""
    mine: dict[str, Any] = dict(inputs)
    ref: dict[str, Any] = dict(inputs)
    stages: list[Stage] = []
    for name, step_id, call, args_of in plan:
        ex = resolve_step(step_id)
        fn = reference.FUNCTIONS[ex.function]
        ref[name] = expected = np.asarray(fn(*args_of(ref)), dtype=np.float64)
        args = args_of(mine)
        on_mine = np.asarray(fn(*args), dtype=np.float64)  # the reference on the learner's input
        got, why = compute(step_id, *args)
        if got is not None and got.shape != on_mine.shape:
            got, why = None, (f"your {ex.function} returns shape {tuple(got.shape)} here, "
                              f"not {tuple(on_mine.shape)}")
        value = on_mine if got is None else got
        mine[name] = value
        tol = ex.tolerance("float64")
        differs = not np.allclose(value, expected, rtol=tol.rtol, atol=tol.atol)
        inherited = differs and bool(np.allclose(value, on_mine, rtol=tol.rtol, atol=tol.atol))
        stages.append(Stage(name, step_id, call, value, expected,
                            Source.REFERENCE if got is None else Source.YOURS, why, differs, inherited))
    first = next((i for i, s in enumerate(stages) if s.differs), None)
    if first is not None:
        s = stages[first]
        stages[first] = Stage(s.name, s.step, s.call, s.value, s.reference, s.source, s.why,
                              s.differs, s.inherited, True)
    return stages


def _numbers(steps: Iterable[str]) -> str:
    nums = sorted({resolve_step(s).number for s in steps})
    words = [str(n) for n in nums]
    return ("step " if len(words) == 1 else "steps ") + ", ".join(words)


@dataclass(frozen=True)
class _Said:
    """What the label needs of a stage (from a `Stage` or its `to_dict()`)."""

    name: str
    step: str
    call: str
    source: Source
    why: str
    first: bool

    @classmethod
    def of(cls, s: Stage | dict[str, Any]) -> _Said:
        if isinstance(s, Stage):
            return cls(s.name, s.step, s.call, s.source, s.why, s.first)
        return cls(s["stage"], s["step"], s["call"], Source(s["source"]), s.get("why", ""),
                   bool(s.get("first")))


OLD_YOURS = "computed with your code (steps 1-5 pass)"
OLD_REFERENCE = "computed with the reference"


def label(stages: Sequence[Stage | dict[str, Any]] | bool, stale: Iterable[str] = ()) -> dict[str, Any]:
    """Whose functions computed the numbers, and why any is the reference's; said beside them.

    Built from the stages themselves, so it cannot claim more than was run:
    "Computed with your steps 1, 2, 4, 5; the reference softmax (step 3),
    because your step3 raises on this input (...)". (`label(yours: bool,
    problems)`, the form before stages, still answers for callers that
    compute by the reference only.)
    """
    if isinstance(stages, bool):
        problems = [p for p in stale if p]
        if stages and not problems:
            return {"source": Source.YOURS.value, "label": OLD_YOURS}
        return {"source": Source.REFERENCE.value, "label": OLD_REFERENCE + (
            f": your code could not be used ({problems[0][:160]})" if stages else "")}
    dicts = [s.to_dict() if isinstance(s, Stage) else s for s in stages]
    stages = [_Said.of(s) for s in stages]
    yours = [s.step for s in stages if s.source is Source.YOURS]
    theirs: dict[str, _Said] = {}
    for s in stages:
        if s.source is Source.REFERENCE and s.step not in theirs and s.step not in yours:
            theirs[s.step] = s
    partly = {s.step for s in stages if s.source is Source.REFERENCE} & set(yours)
    parts = []
    if yours:
        parts.append(f"your {_numbers(yours)}")
    unwritten = [st for st, s in theirs.items() if s.why.endswith("is not written yet")]
    if unwritten:
        names = ", ".join(resolve_step(st).function for st in unwritten)
        parts.append(f"the reference {names} ({_numbers(unwritten)}), because your "
                     f"{'one is' if len(unwritten) == 1 else 'ones are'} not written yet")
    for step, s in theirs.items():
        if step not in unwritten:
            ex = resolve_step(step)
            parts.append(f"the reference {ex.function} (step {ex.number}), because {s.why}")
    for step in sorted(partly, key=lambda x: resolve_step(x).number):
        s = next(t for t in stages if t.step == step and t.source is Source.REFERENCE)
        ex = resolve_step(step)
        parts.append(f"the reference {ex.function} (step {ex.number}) for {s.call}, because {s.why}")
    lead = ("Computed with your code: " if not theirs and not partly else
            "Computed with the reference: " if not yours else "Computed with your code where it can: ")
    text = lead + "; ".join(parts) + "."
    stale_here = sorted({s for s in stale} & {s.step for s in stages}, key=lambda x: resolve_step(x).number)
    if stale_here:
        text += (f" Your {_numbers(stale_here)} changed since the last check: check "
                 f"{'it' if len(stale_here) == 1 else 'them'} again.")
    first = next((s for s in stages if s.first), None)
    if first is not None:
        text += (f" The first stage that departs from the reference: {first.name} "
                 f"(step {resolve_step(first.step).number}).")
    source = Source.YOURS if not theirs and not partly else Source.REFERENCE if not yours else Source.MIXED
    return {"source": source.value, "label": text, "stale": stale_here,
            "yours": sorted({resolve_step(s).number for s in yours}),
            "reference": sorted({resolve_step(s).number for s in (*theirs, *partly)}),
            "first": first.name if first else None, "stages": dicts}


# ------------------------------------------------------------------ the three widgets
def _plain(stages: Sequence[Stage]) -> dict[str, Any]:
    """The stages as JSON-ready data (what `label` reads), and each one's problem (older callers)."""
    return {"stages": [s.to_dict() for s in stages], "problems": [s.why for s in stages]}


def heatmap(compute: Compute, tokens: Sequence[str], queries: np.ndarray, keys: np.ndarray) -> dict[str, Any]:
    """Steps 1-4 with the identity as values: the output *is* the weight matrix; step 5 beside it."""
    d_k = queries.shape[-1]
    eye = np.eye(len(tokens))
    plan: Plan = (
        ("scores", "step1", "dot_scores(Q, K)", lambda c: (c["Q"], c["K"])),
        ("scaled", "step2", f"scale_scores(scores, {d_k})", lambda c: (c["scores"], d_k)),
        ("weights", "step3", "softmax(scaled)", lambda c: (c["scaled"],)),
        ("output", "step4", "weighted_sum(weights, I)", lambda c: (c["weights"], eye)),
        ("attention", "step5", "attention(Q, K, I)", lambda c: (c["Q"], c["K"], eye)),
    )
    stages = run_stages(compute, plan, {"Q": queries, "K": keys})
    out, att = stages[3], stages[4]
    return {"tokens": list(tokens), "weights": np.round(out.value, 4).tolist(),
            "reference_weights": np.round(out.reference, 4).tolist() if out.differs else None,
            "attention_weights": np.round(att.value, 4).tolist() if att.differs else None,
            **_plain(stages)}


def example(compute: Compute, q: np.ndarray, keys: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """Every stage for one query, each stage fed the previous one's answer."""
    d_k = q.shape[0]
    plan: Plan = (
        ("scores", "step1", "dot_scores(q, K)", lambda c: (c["q"], c["K"])),
        ("scaled", "step2", f"scale_scores(scores, {d_k})", lambda c: (c["scores"], d_k)),
        ("weights", "step3", "softmax(scaled)", lambda c: (c["scaled"],)),
        ("output", "step4", "weighted_sum(weights, V)", lambda c: (c["weights"], c["V"])),
        ("attention", "step5", "attention(q, K, V)", lambda c: (c["q"], c["K"], c["V"])),
    )
    stages = run_stages(compute, plan, {"q": q[None, :], "K": keys, "V": values})
    row = {s.name: s.value[0].tolist() for s in stages}
    return {"q": q.tolist(), "keys": keys.tolist(), "values": values.tolist(), "d_k": d_k,
            "scores": row["scores"], "scaled": row["scaled"], "weights": row["weights"],
            "output": row["output"], "attention": row["attention"], **_plain(stages)}


def _scale_numbers(scores: np.ndarray, scaled_scores: np.ndarray, raw: np.ndarray,
                   scaled: np.ndarray) -> dict[str, Any]:
    return {"spread_raw": float(np.std(scores)), "spread_scaled": float(np.std(scaled_scores)),
            "max_weight_raw": float(np.mean(raw.max(axis=-1))),
            "max_weight_scaled": float(np.mean(scaled.max(axis=-1))),
            "example_raw": np.round(raw[0, 0], 4).tolist(),
            "example_scaled": np.round(scaled[0, 0], 4).tolist()}


def scale(compute: Compute, d_k: int) -> dict[str, Any]:
    """Random unit-variance q and k of width d_k: the spread of q·k, the largest weight, scaled or not."""
    rng = np.random.default_rng(d_k)
    plan: Plan = (
        ("scores", "step1", "dot_scores(Q, K)", lambda c: (c["Q"], c["K"])),
        ("weights, not scaled", "step3", "softmax(scores)", lambda c: (c["scores"],)),
        ("scaled", "step2", f"scale_scores(scores, {d_k})", lambda c: (c["scores"], d_k)),
        ("weights", "step3", "softmax(scaled)", lambda c: (c["scaled"],)),
    )
    inputs = {"Q": rng.standard_normal((SCALE_TRIALS, 1, d_k)),
              "K": rng.standard_normal((SCALE_TRIALS, SCALE_KEYS, d_k))}
    stages = run_stages(compute, plan, inputs)
    mine = _scale_numbers(*(s.value for s in (stages[0], stages[2], stages[1], stages[3])))
    ref = _scale_numbers(*(s.reference for s in (stages[0], stages[2], stages[1], stages[3])))
    return {"d_k": d_k, "keys": SCALE_KEYS, "trials": SCALE_TRIALS, **mine,
            "reference_numbers": ref if any(s.differs for s in stages) else None, **_plain(stages)}
