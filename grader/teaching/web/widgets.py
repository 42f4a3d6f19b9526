"""The three widgets' numbers, by the learner's own functions (in the sandbox) or the reference.

`LearnerFunctions` keeps one sandboxed `Learner` per step, reloaded when its
file changes, and falls back to the reference (saying why) when the
learner's code fails or gives non-finite numbers. The widget functions take
plain arrays and a `compute(step_id, *args)`; `bridge` decides whose
functions those are (the learner's once steps 1-5 pass) and feeds them the
lesson's data.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from attn_practice.grader.catalog import Exercise
from attn_practice.reference import attention as reference


class Source(str, enum.Enum):
    """Whose functions computed a widget's numbers."""

    YOURS = "yours"
    REFERENCE = "reference"


Compute = Callable[..., tuple[np.ndarray, str]]
YOURS = "computed with your code (steps 1-5 pass)"
REFERENCE = "computed with the reference: pass steps 1-5 and these use your own functions"
SCALE_TRIALS = 100
SCALE_KEYS = 8


class LearnerFunctions:
    """The learner's step functions, each in its own sandbox, kept warm between calls."""

    def __init__(self, root: Path):
        self.root = root
        self._launcher: Any = None
        self._learners: dict[str, tuple[Any, Any]] = {}
        self.closed = False

    def _learner(self, ex: Exercise, sig: Any) -> Any:
        from attn_practice.grader.sandbox.launcher import Launcher, Limits
        from attn_practice.grader.sandbox.learner import Learner

        if self.closed:
            raise RuntimeError("the server is stopping")
        cached = self._learners.get(ex.id)
        if cached is not None and cached[0] == sig:
            return cached[1]
        if cached is not None:
            cached[1].close()
        if self._launcher is None:
            self._launcher = Launcher()
        learner = Learner(self._launcher, self.root, step_id=ex.id, module=ex.module,
                          function=ex.function, params=ex.params, limits=Limits())
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
            learner.begin_load()
        for learner in fresh:
            learner.load()

    def __call__(self, ex: Exercise, sig: Any, *args: Any) -> tuple[np.ndarray, str]:
        """(the learner's answer, "") or (the reference's answer, why theirs could not be used)."""
        from attn_practice.grader.sandbox.learner import LearnerError

        try:
            got = np.asarray(self._learner(ex, sig)(*args), dtype=np.float64)
            if np.all(np.isfinite(got)):
                return got, ""
            problem = f"{ex.function} returned non-finite numbers"
        except LearnerError as exc:
            problem = exc.failure.summary
        except (RuntimeError, OSError) as exc:
            problem = f"the sandbox failed ({exc})"
        dropped = self._learners.pop(ex.id, None)
        if dropped is not None:
            dropped[1].close()
        return np.asarray(reference.FUNCTIONS[ex.function](*args)), problem

    def close(self) -> None:
        self.closed = True
        for _, learner in self._learners.values():
            learner.close()
        self._learners.clear()
        if self._launcher is not None:
            self._launcher.close()
            self._launcher = None


def by_reference(ex: Exercise, *args: Any) -> tuple[np.ndarray, str]:
    return np.asarray(reference.FUNCTIONS[ex.function](*args)), ""


def label(yours: bool, problems: Sequence[str]) -> dict[str, str]:
    """Where the numbers came from, said on the page beside them."""
    problems = [p for p in problems if p]
    if not yours:
        return {"source": Source.REFERENCE.value, "label": REFERENCE}
    if problems:
        return {"source": Source.REFERENCE.value, "label": "computed with the reference: your code could "
                f"not be used ({problems[0][:160]})"}
    return {"source": Source.YOURS.value, "label": YOURS}


def heatmap(compute: Compute, tokens: Sequence[str], queries: np.ndarray, keys: np.ndarray) -> dict[str, Any]:
    """attention(Q, K, I): with the identity as values, the output *is* the weight matrix."""
    w, problem = compute("step5", queries, keys, np.eye(len(tokens)))
    return {"tokens": list(tokens), "weights": np.round(w, 4).tolist(), "problems": [problem]}


def example(compute: Compute, q: np.ndarray, keys: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """Every stage for one query, each stage fed the previous one's answer."""
    d_k = q.shape[0]
    scores, p1 = compute("step1", q[None, :], keys)
    scaled, p2 = compute("step2", scores, d_k)
    weights, p3 = compute("step3", scaled)
    output, p4 = compute("step4", weights, values)
    return {"q": q.tolist(), "keys": keys.tolist(), "values": values.tolist(), "d_k": d_k,
            "scores": scores[0].tolist(), "scaled": scaled[0].tolist(),
            "weights": weights[0].tolist(), "output": output[0].tolist(), "problems": [p1, p2, p3, p4]}


def scale(compute: Compute, d_k: int) -> dict[str, Any]:
    """Random unit-variance q and k of width d_k: the spread of q·k, the largest weight, scaled or not."""
    rng = np.random.default_rng(d_k)
    Q = rng.standard_normal((SCALE_TRIALS, 1, d_k))
    K = rng.standard_normal((SCALE_TRIALS, SCALE_KEYS, d_k))
    scores, p1 = compute("step1", Q, K)
    raw, p2 = compute("step3", scores)
    scaled_scores, p3 = compute("step2", scores, d_k)
    scaled, p4 = compute("step3", scaled_scores)
    return {"d_k": d_k, "keys": SCALE_KEYS, "trials": SCALE_TRIALS,
            "spread_raw": float(np.std(scores)), "spread_scaled": float(np.std(scaled_scores)),
            "max_weight_raw": float(np.mean(raw.max(axis=-1))),
            "max_weight_scaled": float(np.mean(scaled.max(axis=-1))),
            "example_raw": np.round(raw[0, 0], 4).tolist(),
            "example_scaled": np.round(scaled[0, 0], 4).tolist(), "problems": [p1, p2, p3, p4]}
