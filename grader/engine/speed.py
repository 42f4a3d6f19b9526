"""After a pass: is the learner's function far slower than it needs to be?

A correct solution written with Python loops passes, with a note that
suggests vectorising. The learner's function is timed in its sandbox (the
sandbox measures each call) on one moderate input; the reference is timed
in this process on the same input; the faster of three runs counts on
each side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.sandbox.learner import Learner, LearnerError
from attn_practice.reference import attention as reference

#: the note is given when the learner's code is this many times slower than the reference ...
SLOW_RATIO = 50.0
#: ... and takes at least this long per call (microsecond noise is not a reason to nag)
MIN_SECONDS = 0.005
RUNS = 3
#: after one call this slow, skip the repeats: one sample is enough to judge
SLOW_ENOUGH = 0.5

B, N, D = 8, 64, 32  # batch, sequence length, width of the moderate input


def moderate_input(function: str, seed: int = 0) -> tuple[tuple[Any, ...], str]:
    """A moderate input for the step's function and a short description of it."""
    rng = np.random.default_rng(seed)

    def arr(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape)

    qkv = f"Q, K, V of shape ({B}, {N}, {D})"
    causal = np.tril(np.ones((N, N), dtype=bool))
    inputs: dict[str, Callable[[], tuple[tuple[Any, ...], str]]] = {
        "dot_scores": lambda: ((arr(B, N, D), arr(B, N, D)), f"Q, K of shape ({B}, {N}, {D})"),
        "scale_scores": lambda: ((arr(B, N, N), D), f"scores of shape ({B}, {N}, {N})"),
        "softmax": lambda: ((arr(B, N, N),), f"x of shape ({B}, {N}, {N})"),
        "weighted_sum": lambda: ((reference.softmax(arr(B, N, N)), arr(B, N, D)),
                                 f"weights ({B}, {N}, {N}) and V ({B}, {N}, {D})"),
        "attention": lambda: ((arr(B, N, D), arr(B, N, D), arr(B, N, D)), qkv),
        "masked_attention": lambda: ((arr(B, N, D), arr(B, N, D), arr(B, N, D), causal),
                                     qkv + " with a causal mask"),
        "self_attention": lambda: ((arr(B, N, D), arr(D, D), arr(D, D), arr(D, D)),
                                   f"Z of shape ({B}, {N}, {D}), weights ({D}, {D})"),
        "multi_head_attention": lambda: ((arr(B, N, D), arr(D, D), arr(D, D), arr(D, D),
                                          arr(D, D), 4),
                                         f"Z of shape ({B}, {N}, {D}), 4 heads"),
    }
    return inputs[function]()


def time_reference(function: str, args: tuple[Any, ...], runs: int = RUNS) -> float:
    fn = reference.FUNCTIONS[function]
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def time_learner(learner: Learner, args: tuple[Any, ...], runs: int = RUNS) -> float | None:
    """The learner's best time in the sandbox; inf if it timed out; None if it raised."""
    best = float("inf")
    for _ in range(runs):
        try:
            seconds = learner.call(*args).seconds
        except LearnerError as exc:
            return float("inf") if exc.kind == "timeout" else None
        best = min(best, seconds)
        if best >= SLOW_ENOUGH:
            break
    return best


def speed_note(learner: Learner, exercise: Exercise) -> str | None:
    """A note when a (passing) function is > SLOW_RATIO x slower than the reference, else None."""
    if exercise.function not in reference.FUNCTIONS:
        return None
    args, what = moderate_input(exercise.function)
    ours = time_reference(exercise.function, args)
    theirs = time_learner(learner, args)
    if theirs is None:
        return None
    if theirs == float("inf"):
        return (f"your {exercise.function} is correct but took more than "
                f"{learner.limits.call_timeout:g} s on {what} (the reference needs "
                f"{_human(ours)}). Python loops over array elements are slow: NumPy's whole-array "
                "operations (@, broadcasting, np.sum(..., axis=...)) do the same work in compiled code.")
    ratio = theirs / max(ours, 1e-9)
    if ratio <= SLOW_RATIO or theirs < MIN_SECONDS:
        return None
    return (f"your {exercise.function} is correct but about {ratio:,.0f}x slower than the reference "
            f"on {what} ({_human(theirs)} vs {_human(ours)}). Python loops over array elements are "
            "slow: try NumPy's whole-array operations (@, np.swapaxes, broadcasting, "
            "np.sum/np.max with axis=..., keepdims=True) instead. `attn-practice solution "
            f"{exercise.id}` shows one way.")


def _human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


__all__ = ["SLOW_RATIO", "moderate_input", "speed_note", "time_learner", "time_reference"]
