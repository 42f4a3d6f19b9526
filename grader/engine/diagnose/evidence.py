"""What the learner answered: observations, and the tolerances that judge them.

A correct implementation can never be matched: a mistake only counts as
evidence where it differs from the reference by far more (`_DIFFERS`, rtol
1e-3) than any correct float64 or float32 computation does (`_RIGHT`), and
the learner must be within the much tighter `_MATCH` of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attn_practice.grader.engine.diagnose.probes import PROBES
from attn_practice.grader.results import FailureKind
from attn_practice.reference.attention import FUNCTIONS
from attn_practice.reference.mistakes import STEP_FUNCTIONS

#: At most this many learner calls per diagnosis (each is a sandbox round trip).
MAX_CALLS = 40
#: At most this many of the failing test inputs are replayed.
MAX_FAILING = 12
#: Failing inputs larger than this (elements over all arrays) are not replayed.
MAX_ELEMENTS = 20_000
#: At most this many readings' outputs are kept per probe (they are small arrays).
MAX_CACHED = 5_000


@dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float  # times max(1, largest finite magnitude of the expected side)


MATCH = Tol(1e-5, 1e-6)  # learner output vs a mistake's output
RIGHT = Tol(1e-4, 1e-6)  # learner output vs the reference (float32-computing learners pass)
DIFFERS = Tol(1e-3, 1e-4)  # a mistake only counts as evidence beyond this from the reference


def _magnitude(a: np.ndarray) -> float:
    if a.size == 0:
        return 1.0
    m = float(np.max(np.abs(a)))
    if not math.isfinite(m):
        finite = a[np.isfinite(a)]
        m = float(np.max(np.abs(finite))) if finite.size else 1.0
    return max(1.0, m)


def close(got: np.ndarray, want: np.ndarray, tol: Tol) -> bool:
    """Same shape, same NaN/inf positions, finite entries within `tol`."""
    if got.shape != want.shape:
        return False
    fin = np.isfinite(want)
    if not fin.all():
        if not (np.array_equal(np.isnan(got), np.isnan(want))
                and np.array_equal(np.isposinf(got), np.isposinf(want))
                and np.array_equal(np.isneginf(got), np.isneginf(want))):
            return False
        got, want = got[fin], want[fin]
    elif not np.isfinite(got).all():
        return False
    atol = 1e-8 + tol.atol * _magnitude(want)
    return bool(np.all(np.abs(got - want) <= atol + tol.rtol * np.abs(want)))


def close_rows(got: np.ndarray, wants: np.ndarray, tol: Tol) -> np.ndarray:
    """`close(got, want, tol)` for each `want` stacked in `wants` (one more leading axis), at once.

    False where `close` is False; True may still be False for `close`, which alone
    tells a NaN from an inf (the diagnosis's search rules out thousands of readings
    with this, and checks the few left one by one).
    """
    n = len(wants)
    if got.size == 0 or n == 0:
        return np.ones(n, dtype=bool)
    flat_wants, flat_got = wants.reshape(n, -1), got.reshape(1, -1)
    fin = np.isfinite(flat_wants)
    same_pattern = (fin == np.isfinite(flat_got)).all(axis=1)
    with np.errstate(all="ignore"):
        size = np.abs(flat_wants)
        magnitude = np.maximum(1.0, np.where(fin, size, 0.0).max(axis=1))
        atol = (1e-8 + tol.atol * magnitude)[:, None]
        within = np.abs(flat_got - flat_wants) <= atol + tol.rtol * size
    return same_pattern & (within | ~fin).all(axis=1)


def differs(out: np.ndarray, ref: np.ndarray) -> bool:
    return not close(out, ref, DIFFERS)


def differs_finitely(out: np.ndarray, ref: np.ndarray) -> bool:
    """Differs in shape or in some entry finite on both sides (not by NaN alone)."""
    if out.shape != ref.shape:
        return True
    both = np.isfinite(out) & np.isfinite(ref)
    return not close(out[both], ref[both], DIFFERS)


def nonfinite_where_finite(out: np.ndarray | None, ref: np.ndarray) -> bool:
    """NaN or inf where the reference is finite (same shape only)."""
    return (out is not None and out.shape == ref.shape
            and bool(np.any(~np.isfinite(out) & np.isfinite(ref))))


def run(fn: Callable[..., Any], args: Sequence[Any]) -> np.ndarray | None:
    """fn(*args) as a float64 array, or None if it raised or returned nothing numeric."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
        out = getattr(out, "value", out)
        if out is None:
            return None
        return np.asarray(out, dtype=np.float64)
    except Exception:  # noqa: BLE001 - a raising mistake or learner is an observation
        return None


#: The name a failing test's input goes by when it is not measured.
FAILING = "failing test"
#: Limits a loaded machine can hit by chance: a call stopped so is asked again, alone.
_BY_CHANCE = frozenset({FailureKind.TIMEOUT, FailureKind.INTERRUPT, FailureKind.CRASH})
#: At most this many such retries per diagnosis (they do not count to MAX_CALLS, so a
#: busy machine replays the same failing inputs as a quiet one).
MAX_RETRIES = 8


#: A learner call stopped by one of the grader's limits (its time, its memory, an answer
#: far larger than asked for) says nothing about which mistake the code makes: np.dot on
#: a large batch is right in every way but size, and a loaded machine can time any call out.
_LIMITED = frozenset({FailureKind.TIMEOUT, FailureKind.MEMORY, FailureKind.CRASH,
                      FailureKind.TOO_LARGE, FailureKind.INTERRUPT})


def ask(call: Callable[..., Any], args: Sequence[Any]) -> tuple[np.ndarray | None, bool]:
    """The learner's answer as `run` gives it, and False when a limit stopped the call instead."""
    out, kind = _ask(call, args)
    return out, kind is None


def _ask(call: Callable[..., Any], args: Sequence[Any]) -> tuple[np.ndarray | None, FailureKind | None]:
    """The learner's answer, and the kind of limit that stopped the call (None: it answered or raised)."""
    try:
        with np.errstate(all="ignore"):
            out = call(*args)
    except Exception as exc:  # noqa: BLE001 - a raising learner is an observation
        kind = getattr(exc, "kind", None)
        return None, kind if kind in _LIMITED else None
    return run(lambda: out, ()), None


@dataclass
class Asker:
    """Calls the learner; a call a limit stopped by chance (a timeout on a busy machine) is
    asked again alone, and if stopped again is recorded as not measured, never dropped unsaid."""

    call: Callable[..., Any]
    retries: int = 0
    unmeasured: list[str] = field(default_factory=list)

    def __call__(self, args: Sequence[Any], name: str) -> tuple[np.ndarray | None, bool]:
        out, kind = _ask(self.call, _copy(args))
        if kind in _BY_CHANCE and self.retries < MAX_RETRIES:
            self.retries += 1
            out, kind = _ask(self.call, _copy(args))
        if kind is not None and name:
            self.unmeasured.append(name)
        return out, kind is None


@dataclass
class Obs:
    """One input: the reference's answer and the learner's (None if it raised)."""

    args: tuple[Any, ...]
    tags: frozenset[str]
    probe: bool
    ref: np.ndarray
    out: np.ndarray | None
    right: bool
    #: any hashable key (a mistake function's id, a reading's config) -> its output here
    cache: dict[Any, Any] = field(default_factory=dict)
    name: str = ""  # the probe's

    @property
    def rank(self) -> int:
        return int(np.ndim(self.args[0]))

    @property
    def large(self) -> bool:
        return "large" in self.tags

    def output(self, cache_key: Any, fn: Callable[..., Any]) -> np.ndarray | None:
        """fn on this input (the arrays are the grader's own copies), computed once."""
        if cache_key not in self.cache:
            if len(self.cache) >= MAX_CACHED:  # a probe's cache lives as long as the process
                self.cache.clear()
            self.cache[cache_key] = run(fn, self.args)
        return self.cache[cache_key]


def _copy(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def usable(args: Any) -> bool:
    """A failing input we can replay: float64 arrays (or masks, ints), not too big."""
    if not isinstance(args, (tuple, list)):
        return False
    size = 0
    for a in args:
        if isinstance(a, np.ndarray):
            if a.dtype.kind == "f" and a.dtype != np.float64:
                return False  # float32 rounding would blur the comparison
            if a.dtype.kind not in "fbiu":
                return False
            size += a.size
    return size <= MAX_ELEMENTS


#: (step, probe index) -> (reference output, the shared output cache of that probe).
#: Probes and mistakes are fixed, so their outputs are computed once per process.
_PROBE_CACHE: dict[tuple[str, int], tuple[np.ndarray | None, dict[Any, Any]]] = {}


def right(out: np.ndarray | None, ref: np.ndarray) -> bool:
    return out is not None and close(out, ref, RIGHT)


def observe(step: str, call: Callable[..., Any], failing: Sequence[Any]) -> list[Obs]:
    """Call the learner on the probes and the failing inputs (at most MAX_CALLS calls)."""
    return observe_all(step, Asker(call), failing)


def observe_all(step: str, asker: Asker, failing: Sequence[Any]) -> list[Obs]:
    """`observe` through `asker`, which keeps the names of the inputs no answer was measured for."""
    reference = FUNCTIONS[STEP_FUNCTIONS[step]]
    obs: list[Obs] = []
    calls = 0
    for index, p in enumerate(PROBES[step]):
        if calls >= MAX_CALLS:
            break
        key = (step, index)
        if key not in _PROBE_CACHE:
            _PROBE_CACHE[key] = (run(reference, _copy(p.args)), {})
        ref, cache = _PROBE_CACHE[key]
        if ref is None or not np.all(np.isfinite(ref)):
            continue
        out, answered = asker(p.args, p.name)
        calls += 1
        if not answered:
            continue
        obs.append(Obs(p.args, p.tags, True, ref, out, right(out, ref), cache, p.name))
    kept = 0
    for args in failing:
        if kept >= MAX_FAILING or calls >= MAX_CALLS:
            break
        if not usable(args):
            continue
        kept += 1
        args = _copy(args)  # ours: the readings run on it in-process
        ref = run(reference, _copy(args))
        if ref is None or not np.all(np.isfinite(ref)):
            continue
        out, answered = asker(args, FAILING)
        calls += 1
        if not answered:
            continue
        large = bool(np.max([np.max(np.abs(a)) for a in args
                             if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size]
                            or [0.0]) > 50.0)
        tags = frozenset({"failing", "large"} if large else {"failing"})
        obs.append(Obs(args, tags, False, ref, out, right(out, ref)))
    # Canary: the learner must still give the same answer to an input it answered
    # before, else later errors may be the sandbox giving up (after timeouts) or
    # the output may depend on chance; then nothing here can be trusted.
    first = next((o for o in obs if o.out is not None), None)
    if first is not None and calls < MAX_CALLS:
        again, answered = asker(first.args, "")
        if answered and (again is None or not np.array_equal(again, first.out, equal_nan=True)):
            return []
    return obs


__all__ = ["MAX_CALLS", "MAX_RETRIES", "FAILING", "Asker", "Obs", "ask", "observe_all", "close", "differs", "differs_finitely", "observe", "run"]
