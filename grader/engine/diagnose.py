"""Name the known mistake behind a failing step (CONTRACT §3).

`diagnose(step_id, call, failing_inputs)` runs the learner's function (through
`call`, one sandbox round trip each) on the failing test inputs and on a few
fixed probe inputs, then compares what came back with what each catalogued
wrong implementation (`reference/mistakes.py`) gives on the same inputs,
computed here in the trusted process.

How an id is matched
--------------------
* By comparison (most ids). On each input, a mistake's output either
  coincides with the reference (that input says nothing), or differs from it,
  and then the learner's output must agree with it (same shape, same NaN/inf
  positions, finite entries within rtol 1e-5 and atol 1e-8 + 1e-6 * the
  output's largest magnitude). A mistake with several typical spellings
  matches an input when any spelling does. The id is reported when no input
  contradicts it and at least one input supports it.
* `wrong-scale` covers every divisor but the right one, so instead of a
  list of spellings the scale is fitted: the learner's output must be the
  correct computation with the scores multiplied by some factor r, where r is
  neither 1/sqrt(d_k) nor a factor that has its own id (1, 1/d_k, sqrt(d_k),
  1/sqrt(d_v), 1/sqrt(d_model)).
* `softmax-unstable`: NaN or inf on a large-magnitude probe (scores around
  1e3) while every small probe is right.
* `fixed-rank`: right on every probe of one number of dimensions, wrong on
  every probe of another, and no other id explains it (a `K.T` is told apart
  by probes shaped so that `K.T` runs and gives its own output).

A correct implementation can never be matched: a mistake only counts as
evidence where it differs from the reference by far more (rtol 1e-3) than any
correct float64 or float32 computation does (`_RIGHT`), and the learner
must be within the much tighter `_MATCH` of it.

Probes use fixed seeds and shapes where n_q, n_k, d_k and d_v all differ, so
one diagnosis costs at most `MAX_CALLS` learner calls and is deterministic.
Nothing here raises: any failure of this module's own logic means "no
diagnosis" for the candidate concerned.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_practice.grader.results import Diagnosis
from attn_practice.reference.attention import FUNCTIONS
from attn_practice.reference.mistakes import MISTAKES, STEP_FUNCTIONS, mistakes_for

#: At most this many learner calls per diagnosis (each is a sandbox round trip).
MAX_CALLS = 40
#: At most this many of the failing test inputs are replayed.
MAX_FAILING = 12
#: Failing inputs larger than this (elements over all arrays) are not replayed.
MAX_ELEMENTS = 20_000

#: Ids found by dedicated probes rather than by output comparison.
PROBE_IDS = frozenset({"softmax-unstable", "fixed-rank"})
#: Ids whose evidence is a fitted score scale.
FITTED_IDS = frozenset({"wrong-scale"})


# ---------------------------------------------------------------- tolerances
@dataclass(frozen=True)
class _Tol:
    rtol: float
    atol: float  # times max(1, largest finite magnitude of the expected side)


_MATCH = _Tol(1e-5, 1e-6)  # learner output vs a mistake's output
_RIGHT = _Tol(1e-4, 1e-6)  # learner output vs the reference (float32-computing learners pass)
_DIFFERS = _Tol(1e-3, 1e-4)  # a mistake only counts as evidence beyond this from the reference


def _magnitude(a: np.ndarray) -> float:
    if a.size == 0:
        return 1.0
    m = float(np.max(np.abs(a)))
    if not math.isfinite(m):
        finite = a[np.isfinite(a)]
        m = float(np.max(np.abs(finite))) if finite.size else 1.0
    return max(1.0, m)


def _close(got: np.ndarray, want: np.ndarray, tol: _Tol) -> bool:
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


def _differs(out: np.ndarray, ref: np.ndarray) -> bool:
    return not _close(out, ref, _DIFFERS)


def _differs_finitely(out: np.ndarray, ref: np.ndarray) -> bool:
    """Differs in shape or in some entry finite on both sides (not by NaN alone)."""
    if out.shape != ref.shape:
        return True
    both = np.isfinite(out) & np.isfinite(ref)
    return not _close(out[both], ref[both], _DIFFERS)


def _right(out: np.ndarray | None, ref: np.ndarray) -> bool:
    return out is not None and _close(out, ref, _RIGHT)


# -------------------------------------------------------------------- probes
@dataclass(frozen=True)
class Probe:
    """One fixed input the learner is called on during a diagnosis."""

    name: str
    args: tuple[Any, ...]
    tags: frozenset[str] = frozenset()

    @property
    def rank(self) -> int:
        return int(np.ndim(self.args[0]))


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random mask whose every row has at least one True and, if it can, one False."""
    m = rng.random(shape) < 0.5
    rows = m.reshape(-1, shape[-1])
    for r in rows:
        if not r.any():
            r[rng.integers(shape[-1])] = True
        if r.all() and shape[-1] > 1:
            r[rng.integers(shape[-1])] = False
    return rows.reshape(shape)


def _probes_step1() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1001)
    n = rng.standard_normal

    def qk(q: tuple[int, ...], k: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        return n(q), n(k)

    return (
        Probe("2d", qk((2, 5), (3, 5))),
        Probe("2d-square", qk((3, 4), (3, 4)), frozenset({"square"})),
        # n_q == n_k == d_k: here Q * K.T runs
        Probe("2d-cube", qk((3, 3), (3, 3)), frozenset({"square"})),
        Probe("3d", qk((2, 3, 4), (2, 5, 4))),
        Probe("3d-square", qk((2, 3, 4), (2, 3, 4)), frozenset({"square"})),
        # batch == d_k == n_k: here K.T runs (and gives its own output)
        Probe("3d-kt", qk((3, 2, 3), (3, 3, 3)), frozenset({"transpose"})),
        Probe("4d", qk((2, 2, 3, 4), (2, 2, 2, 4))),
    )


def _probes_step2() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1002)

    def s(shape: tuple[int, ...], d_k: int) -> tuple[np.ndarray, int]:
        return 3.0 * rng.standard_normal(shape), d_k

    return (
        Probe("1d", s((4,), 3)),
        Probe("2d", s((2, 3), 5)),
        Probe("2d-b", s((3, 4), 7)),
        Probe("3d", s((2, 3, 4), 6)),
        Probe("4d", s((2, 2, 3, 5), 3)),
    )


def _probes_step3() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1003)

    def x(shape: tuple[int, ...]) -> np.ndarray:
        return 2.0 * rng.standard_normal(shape)

    large = frozenset({"large"})
    return (
        Probe("1d", (x((5,)), -1)),
        Probe("2d", (x((3, 4)), -1)),
        Probe("2d-axis0", (x((3, 4)), 0), frozenset({"axis"})),
        Probe("2d-axis-2", (x((3, 4)), -2), frozenset({"axis"})),
        Probe("2d-square", (x((4, 4)), -1), frozenset({"square"})),
        Probe("3d", (x((2, 3, 4)), -1)),
        Probe("3d-axis1", (x((2, 3, 4)), 1), frozenset({"axis"})),
        Probe("4d", (x((2, 2, 3, 3)), -1)),
        Probe("large-offset", (1000.0 + 5.0 * rng.standard_normal((3, 4)), -1), large),
        Probe("large-spread", (rng.uniform(-2000.0, 2000.0, (3, 5)), -1), large),
    )


def _probes_step4() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1004)

    def wv(w: tuple[int, ...], v: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        return _softmax_rows(rng.standard_normal(w)), rng.standard_normal(v)

    return (
        Probe("2d", wv((2, 3), (3, 4))),
        Probe("2d-square", wv((3, 3), (3, 3)), frozenset({"square"})),
        Probe("2d-square-b", wv((4, 4), (4, 2)), frozenset({"square"})),
        Probe("3d", wv((2, 3, 4), (2, 4, 5))),
        # batch == n_q and d_v == n_k: here (V.T @ weights.T).T runs
        Probe("3d-t", wv((2, 2, 3), (2, 3, 3)), frozenset({"transpose"})),
        Probe("3d-square", wv((2, 3, 3), (2, 3, 4)), frozenset({"square"})),
        Probe("4d", wv((2, 2, 2, 3), (2, 2, 3, 4))),
    )


def _probes_step5() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1005)
    n = rng.standard_normal

    def qkv(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
            scale: float = 1.0) -> tuple[np.ndarray, ...]:
        return scale * n(q), scale * n(k), n(v)

    return (
        Probe("2d", qkv((2, 5), (3, 5), (3, 4))),
        Probe("2d-square", qkv((4, 3), (4, 3), (4, 5)), frozenset({"square"})),
        Probe("3d", qkv((2, 3, 6), (2, 5, 6), (2, 5, 2))),
        Probe("3d-square", qkv((2, 3, 4), (2, 3, 4), (2, 3, 5)), frozenset({"square"})),
        Probe("3d-kt", qkv((3, 1, 3), (3, 3, 3), (3, 3, 2)), frozenset({"transpose"})),
        Probe("4d", qkv((2, 2, 3, 4), (2, 2, 2, 4), (2, 2, 2, 5))),
        Probe("large", qkv((3, 5), (4, 5), (4, 3), scale=40.0), frozenset({"large"})),
    )


def _probes_step6() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1006)
    n = rng.standard_normal

    def qkvm(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
             mask: np.ndarray | tuple[int, ...], scale: float = 1.0) -> tuple[np.ndarray, ...]:
        m = mask if isinstance(mask, np.ndarray) else _mask(rng, mask)
        return scale * n(q), scale * n(k), n(v), m

    causal = np.tril(np.ones((4, 4), dtype=bool))
    return (
        Probe("2d", qkvm((3, 5), (4, 5), (4, 2), (3, 4))),
        Probe("2d-causal", qkvm((4, 3), (4, 3), (4, 5), causal), frozenset({"square"})),
        Probe("2d-square", qkvm((3, 4), (3, 4), (3, 2), (3, 3)), frozenset({"square"})),
        Probe("3d-shared-mask", qkvm((2, 3, 6), (2, 5, 6), (2, 5, 2), (3, 5))),
        Probe("3d", qkvm((2, 3, 5), (2, 4, 5), (2, 4, 3), (2, 3, 4))),
        Probe("3d-kt", qkvm((3, 1, 3), (3, 3, 3), (3, 3, 2), np.array([[True, False, True]])),
              frozenset({"transpose"})),
        Probe("4d-shared-mask", qkvm((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 2), (3, 5))),
        Probe("4d", qkvm((2, 1, 2, 3), (2, 1, 4, 3), (2, 1, 4, 5), (2, 1, 2, 4))),
        Probe("large", qkvm((3, 5), (4, 5), (4, 2), (3, 4), scale=40.0), frozenset({"large"})),
    )


def _probes_step7() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1007)
    n = rng.standard_normal

    def zw(z: tuple[int, ...], d_k: int, d_v: int, scale: float = 0.6) -> tuple[np.ndarray, ...]:
        d_model = z[-1]
        return n(z), scale * n((d_model, d_k)), scale * n((d_model, d_k)), scale * n((d_model, d_v))

    return (
        Probe("2d", zw((3, 4), 5, 2)),
        Probe("2d-same-width", zw((4, 5), 3, 3)),
        Probe("3d", zw((2, 3, 4), 6, 2)),
        Probe("3d-same-width", zw((2, 4, 3), 2, 2)),
        Probe("3d-kt", zw((3, 3, 4), 3, 2), frozenset({"transpose"})),
        Probe("4d", zw((2, 2, 3, 4), 5, 3)),
        Probe("large", zw((3, 4), 5, 2, scale=25.0), frozenset({"large"})),
    )


def _probes_step8() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1008)
    n = rng.standard_normal

    def zw(z: tuple[int, ...], n_heads: int, scale: float = 0.5) -> tuple[Any, ...]:
        d = z[-1]
        return (n(z), scale * n((d, d)), scale * n((d, d)), scale * n((d, d)), scale * n((d, d)),
                n_heads)

    return (
        Probe("2d", zw((3, 6), 2)),
        Probe("2d-3-heads", zw((4, 6), 3)),
        # n == d_h == n_heads: here heads stacked on a batch axis with K.T run
        Probe("2d-cube-heads", zw((3, 9), 3), frozenset({"transpose"})),
        Probe("3d", zw((2, 3, 4), 2)),
        # batch == n == d_h: here a per-head K.T runs
        Probe("3d-kt", zw((3, 3, 6), 2), frozenset({"transpose"})),
        Probe("4d", zw((2, 2, 3, 6), 3)),
        Probe("large", zw((3, 6), 2, scale=25.0), frozenset({"large"})),
    )


def _frozen(probes: tuple[Probe, ...]) -> tuple[Probe, ...]:
    """Make every probe array read-only: they are shared by every diagnosis."""
    for p in probes:
        for a in p.args:
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
    return probes


#: Step id -> the fixed probe inputs for that step (read-only arrays).
PROBES: dict[str, tuple[Probe, ...]] = {
    "step1": _frozen(_probes_step1()),
    "step2": _frozen(_probes_step2()),
    "step3": _frozen(_probes_step3()),
    "step4": _frozen(_probes_step4()),
    "step5": _frozen(_probes_step5()),
    "step6": _frozen(_probes_step6()),
    "step7": _frozen(_probes_step7()),
    "step8": _frozen(_probes_step8()),
}


# -------------------------------------------------------------- observations
@dataclass
class _Obs:
    """One input: the reference's answer and the learner's (None if it raised)."""

    args: tuple[Any, ...]
    tags: frozenset[str]
    probe: bool
    ref: np.ndarray
    out: np.ndarray | None
    right: bool
    cache: dict[int, Any]  # id(mistake function) -> _Cand

    @property
    def rank(self) -> int:
        return int(np.ndim(self.args[0]))


def _copy(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _run(fn: Callable[..., Any], args: Sequence[Any]) -> np.ndarray | None:
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


def _usable(args: Any) -> bool:
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


#: (step, probe index) -> (reference output, the mistakes' `_Cand`s by function id).
#: Probes and mistakes are fixed, so these are computed once per process.
_PROBE_CACHE: dict[tuple[str, int], tuple[np.ndarray | None, dict[int, Any]]] = {}


def _probe_reference(step: str, index: int, reference: Callable[..., Any]
                     ) -> tuple[np.ndarray | None, dict[int, Any]]:
    key = (step, index)
    if key not in _PROBE_CACHE:
        _PROBE_CACHE[key] = (_run(reference, _copy(PROBES[step][index].args)), {})
    return _PROBE_CACHE[key]


def _observe(step: str, call: Callable[..., Any],
             failing: Sequence[Any]) -> list[_Obs]:
    reference = FUNCTIONS[STEP_FUNCTIONS[step]]
    obs: list[_Obs] = []
    calls = 0
    for index, p in enumerate(PROBES[step]):
        if calls >= MAX_CALLS:
            break
        ref, cache = _probe_reference(step, index, reference)
        if ref is None or not np.all(np.isfinite(ref)):
            continue
        out = _run(call, _copy(p.args))
        calls += 1
        obs.append(_Obs(p.args, p.tags, True, ref, out, _right(out, ref), cache))
    kept = 0
    for args in failing:
        if kept >= MAX_FAILING or calls >= MAX_CALLS:
            break
        if not _usable(args):
            continue
        kept += 1
        args = _copy(args)  # ours: the mistakes run on it in-process
        ref = _run(reference, _copy(args))
        if ref is None or not np.all(np.isfinite(ref)):
            continue
        out = _run(call, _copy(args))
        calls += 1
        obs.append(_Obs(args, frozenset({"failing"}), False, ref, out, _right(out, ref), {}))
    # Canary: the learner must still give the same answer to an input it answered
    # before, else later errors may be the sandbox giving up (after timeouts) or
    # the output may depend on chance; then nothing here can be trusted.
    first = next((o for o in obs if o.out is not None), None)
    if first is not None and calls < MAX_CALLS:
        again = _run(call, _copy(first.args))
        if again is None or not np.array_equal(again, first.out, equal_nan=True):
            return []
    return obs


# ---------------------------------------------------------------- comparison
@dataclass(frozen=True)
class _Verdict:
    id: str
    support: int  # inputs where the learner matches this mistake and not the reference
    unexplained: int  # inputs where the learner is wrong and this mistake says nothing


@dataclass(frozen=True)
class _Cand:
    """A mistake's output on one input, and how it stands to the reference."""

    out: np.ndarray | None  # None: this spelling raises here
    differs: bool = False  # beyond _DIFFERS from the reference
    evidence: bool = False  # ... and not by NaN alone: a match here is support


def _candidate(o: _Obs, fn: Callable[..., Any]) -> _Cand:
    key = id(fn)
    cand = o.cache.get(key)
    if cand is None:
        got = _run(fn, o.args)
        if got is None:
            cand = _Cand(None)
        else:
            differs = _differs(got, o.ref)
            cand = _Cand(got, differs, differs and _differs_finitely(got, o.ref))
        o.cache[key] = cand
    return cand


def _outcome(o: _Obs, fns: Sequence[Callable[..., Any]]) -> str:
    """'support', 'consistent', 'silent' or 'contradicts' for one input."""
    any_differs = False
    consistent = False
    some_raised = False
    for fn in fns:
        cand = _candidate(o, fn)
        if cand.out is None:
            some_raised = True
            consistent = consistent or o.out is None
            continue
        any_differs = any_differs or cand.differs
        if not cand.differs and o.right:
            consistent = True
        elif o.out is not None and _close(o.out, cand.out, _MATCH):
            if cand.evidence:
                return "support"
            consistent = True
    if consistent:
        return "consistent"
    # Where one spelling of the mistake raises, spellings disagree on this
    # input: it cannot tell whether the learner wrote yet another one.
    return "contradicts" if any_differs and not some_raised else "silent"


def _compare(mistake_id: str, obs: Sequence[_Obs],
             fns: Sequence[Callable[..., Any]]) -> _Verdict | None:
    support = unexplained = 0
    on_probe = False
    for o in obs:
        verdict = _outcome(o, fns)
        if verdict == "contradicts":
            return None
        if verdict == "support":
            support += 1
            on_probe = on_probe or o.probe
        elif verdict == "silent" and not o.right:
            unexplained += 1
    return _Verdict(mistake_id, support, unexplained) if on_probe else None


# ------------------------------------------------- generated spellings
def _projection_candidates(step: str) -> list[Callable[..., Any]]:
    """Every way of using the wrong weight matrix for some of Q, K and V."""
    reference = FUNCTIONS[STEP_FUNCTIONS[step]]
    out: list[Callable[..., Any]] = []
    for pick in itertools.product(range(3), repeat=3):
        if pick == (0, 1, 2):
            continue
        if step == "step7":
            def fn(Z: Any, *W: Any, _p: tuple[int, ...] = pick) -> Any:
                return reference(Z, W[_p[0]], W[_p[1]], W[_p[2]])
        else:
            def fn(Z: Any, *rest: Any, _p: tuple[int, ...] = pick) -> Any:
                W, (W_o, n_heads) = rest[:3], rest[3:]
                return reference(Z, W[_p[0]], W[_p[1]], W[_p[2]], W_o, n_heads)
        out.append(fn)
    return out


#: (step, id) -> extra in-process spellings, too many to list in the catalogue.
_GENERATED: dict[tuple[str, str], list[Callable[..., Any]]] = {
    ("step7", "projections-swapped"): _projection_candidates("step7"),
    ("step8", "projections-swapped"): _projection_candidates("step8"),
}


# ------------------------------------------------------------- fitted scale
def _softmax_last(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))  # every row has a finite entry
    return e / np.sum(e, axis=-1, keepdims=True)


def _swap(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


#: The output for a batch of score factors r (shape (m,)) -> shape (m, *output).
_Family = Callable[[np.ndarray], np.ndarray]


def _scale_family(step: str, args: Sequence[Any]) -> tuple[_Family, list[float]] | None:
    """(output as a function of the score factor r, the factors that are not wrong-scale)."""
    a = [np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) and x.dtype.kind == "f"
         else x for x in args]
    if step == "step2":
        scores, d_k = a[0], float(a[1])

        def scaled(r: np.ndarray) -> np.ndarray:
            return scores[None] * r.reshape((-1,) + (1,) * scores.ndim)

        return scaled, [1 / math.sqrt(d_k), 1.0, 1 / d_k, math.sqrt(d_k)]
    if step in ("step5", "step6", "step7"):
        if step == "step7":
            Z, W_q, W_k, W_v = a
            Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
        else:
            Q, K, V = a[0], a[1], a[2]
        S = Q @ _swap(K)
        mask = np.asarray(a[3], dtype=bool) if step == "step6" else None
        d_k, d_v = Q.shape[-1], V.shape[-1]

        def attend(r: np.ndarray) -> np.ndarray:
            s = S[None] * r.reshape((-1,) + (1,) * S.ndim)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            return _softmax_last(s) @ V

        return attend, [1 / math.sqrt(d_k), 1.0, 1 / d_k, math.sqrt(d_k), 1 / math.sqrt(d_v)]
    if step == "step8":
        Z, W_q, W_k, W_v, W_o, n_heads = a
        n_heads = int(n_heads)
        d_model = Z.shape[-1]
        d_h = d_model // n_heads
        Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
        blocks = [slice(h * d_h, (h + 1) * d_h) for h in range(n_heads)]
        S = [Q[..., c] @ _swap(K[..., c]) for c in blocks]
        Vs = [V[..., c] for c in blocks]

        def heads(r: np.ndarray) -> np.ndarray:
            rr = r.reshape((-1,) + (1,) * S[0].ndim)
            return np.concatenate([_softmax_last(s[None] * rr) @ v for s, v in zip(S, Vs, strict=True)],
                                  axis=-1) @ W_o

        return heads, [1 / math.sqrt(d_h), 1.0, 1 / d_h, math.sqrt(d_h), 1 / math.sqrt(d_model)]
    return None


_R_MIN, _R_MAX = 1e-3, 1e2


def _fit_factor(g: _Family, target: np.ndarray) -> float:
    """The factor r (about [_R_MIN, _R_MAX]) whose output is closest to `target`.

    A grid over log r, refined around its best point eight times (to ~1e-10).
    """
    lo, hi = math.log(_R_MIN), math.log(_R_MAX)
    best = lo
    for _ in range(8):
        ts = np.linspace(lo, hi, 33)
        d = g(np.exp(ts)) - target[None]
        errs = np.sum(d.reshape(len(ts), -1) ** 2, axis=1)
        errs = np.where(np.isfinite(errs), errs, np.inf)
        i = int(np.argmin(errs))
        best, step = float(ts[i]), float(ts[1] - ts[0])
        lo, hi = best - step, best + step
    return math.exp(best)


def _scale_outcome(step: str, o: _Obs) -> str:
    if o.right:
        return "consistent"
    if o.out is None or o.out.shape != o.ref.shape or not np.all(np.isfinite(o.out)):
        return "contradicts"
    family = _scale_family(step, o.args)
    if family is None:
        return "silent"
    g, specials = family
    with np.errstate(all="ignore"):
        r = _fit_factor(g, o.out)
        if not (_R_MIN <= r <= _R_MAX):
            return "contradicts"
        if not _close(o.out, g(np.array([r]))[0], _MATCH):
            return "contradicts"
        if any(abs(math.log(r / s)) < 1e-3 for s in specials) or any(
                _close(o.out, out, _MATCH) for out in g(np.array(specials))):
            return "consistent"  # the right factor, or one with its own id
        # not merely a limit: all-equal weights (r -> 0) or a hard max (r -> inf)
        if step != "step2":
            for limit in g(np.array([1e-9, 1e9])):
                if _close(o.out, limit, _MATCH):
                    return "contradicts"
    return "support"


def _fit_scale(step: str, obs: Sequence[_Obs]) -> _Verdict | None:
    support = 0
    on_probe = False
    for o in obs:
        verdict = _scale_outcome(step, o)
        if verdict == "contradicts":
            return None
        if verdict == "support":
            support += 1
            on_probe = on_probe or o.probe
    return _Verdict("wrong-scale", support, 0) if on_probe else None


# ------------------------------------------------------------ special probes
def _unstable(obs: Sequence[_Obs]) -> bool:
    """NaN/inf (or an error) on a large-magnitude probe, right on every small probe."""
    large = [o for o in obs if o.probe and "large" in o.tags]
    small = [o for o in obs if o.probe and "large" not in o.tags]
    if not large or not small or not all(o.right for o in small):
        return False
    return any(o.out is None or not np.all(np.isfinite(o.out)) for o in large)


def _fixed_rank(obs: Sequence[_Obs]) -> bool:
    """All right at one number of dimensions, all wrong at another, never mixed."""
    groups: dict[int, list[_Obs]] = {}
    for o in obs:
        if "large" not in o.tags:
            groups.setdefault(o.rank, []).append(o)
    ok = bad = False
    for members in groups.values():
        if not any(o.probe for o in members):
            continue
        if all(o.right for o in members):
            ok = True
        elif not any(o.right for o in members):
            bad = True
        else:
            return False  # right and wrong at the same rank: some other mistake
    return ok and bad


# -------------------------------------------------------------------- public
def _step_id(step_id: str) -> str | None:
    s = str(step_id).strip().lower()
    if s.isdigit():
        s = f"step{s}"
    s = s.split("_", 1)[0]
    return s if s in PROBES else None


def mistake_for_id(mistake_id: str) -> Diagnosis:
    """The learner-facing `Diagnosis` for a catalogued id."""
    m = MISTAKES[mistake_id]
    return Diagnosis(id=m.id, title=m.title, explanation=m.explanation, nudge=m.nudge)


def diagnose(step_id: str, call: Callable[..., Any],
             failing_inputs: Sequence[tuple[Any, ...]] | None = None) -> list[Diagnosis]:
    """The known mistakes that explain the learner's outputs, most likely first.

    `call(*args)` runs the learner's function (in its sandbox) and returns a
    float64 array; any exception from it counts as "no output". Never raises.
    """
    try:
        step = _step_id(step_id)
        if step is None:
            return []
        return [mistake_for_id(i) for i in _diagnose(step, call, list(failing_inputs or ()))]
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a crash
        return []


def _diagnose(step: str, call: Callable[..., Any], failing: list[Any]) -> list[str]:
    obs = _observe(step, call, failing)
    if not obs:
        return []
    by_id: dict[str, list[Callable[..., Any]]] = {}
    for mistake, fn in mistakes_for(step):
        if mistake.id not in PROBE_IDS and mistake.id not in FITTED_IDS:
            by_id.setdefault(mistake.id, []).append(fn)
    for (gen_step, mid), fns in _GENERATED.items():
        if gen_step == step:
            by_id.setdefault(mid, []).extend(fns)
    order = {mid: i for i, mid in enumerate(MISTAKES)}
    verdicts: list[_Verdict] = []
    for mid, fns in by_id.items():
        try:
            v = _compare(mid, obs, fns)
        except Exception:  # noqa: BLE001
            v = None
        if v is not None:
            verdicts.append(v)
    explained = any(v.unexplained == 0 for v in verdicts)
    if not explained and any(m.id == "wrong-scale" for m, _ in mistakes_for(step)):
        try:
            v = _fit_scale(step, obs)
        except Exception:  # noqa: BLE001
            v = None
        if v is not None:
            verdicts.append(v)
    verdicts.sort(key=lambda v: (v.unexplained, -v.support, order.get(v.id, 0)))
    found = [v.id for v in verdicts]
    step_ids = {m.id for m, _ in mistakes_for(step)}
    try:
        if "softmax-unstable" in step_ids and _unstable(obs):
            found.append("softmax-unstable")
    except Exception:  # noqa: BLE001
        pass
    try:
        if not found and "fixed-rank" in step_ids and _fixed_rank(obs):
            found.append("fixed-rank")
    except Exception:  # noqa: BLE001
        pass
    return found


__all__ = ["MAX_CALLS", "PROBES", "Probe", "diagnose", "mistake_for_id"]
