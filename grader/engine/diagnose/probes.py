"""The fixed inputs every diagnosis calls the learner on, step by step.

Shapes keep n_q, n_k, d_k and d_v apart so that each catalogued mistake shows,
and some probes neutralise one kind of mistake so that another can be seen
alone: d_k = 1 (every scaling mistake vanishes), an all-True mask (mask
mistakes that only move blocked pairs vanish), one head or W_o = I (head and
output-projection mistakes), 2-D-only sets (batch-axis mistakes vanish), and
"large" probes: scores in the thousands on otherwise easy input, where only an
unstable softmax breaks. Seeds are fixed, so a diagnosis is deterministic.

The behavioural probes (issue 39, read by `behaviour.py`) come in sets that
differ in one thing: "causal" with only its last position changed ("-moved")
or only its first ("-first"); step 6's "mask" under a mask and its
complement; step 8's "heads" (W_o = I) with only head 1's weight columns
changed. They are drawn after (or apart from) the others, which keep their values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Probe:
    """One fixed input the learner is called on during a diagnosis."""

    name: str
    args: tuple[Any, ...]
    tags: frozenset[str] = frozenset()

    @property
    def rank(self) -> int:
        return int(np.ndim(self.args[0]))


LARGE = frozenset({"large"})
#: Behavioural probe pairs (`behaviour.py`): a probe, and the same one with one thing changed.
CAUSAL_PAIR = frozenset({"causal"})
MASK_PAIR = frozenset({"mask"})
HEAD_PAIR = frozenset({"heads"})
MOVED = "-moved"
FIRST = "-first"


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


def _aligned(rng: np.random.Generator, n_q: int, n_k: int, d: int,
             c: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    """Q and K along one shared direction: scores in the thousands that differ by little.

    Only an exponential taken without subtracting the maximum overflows here; a
    correct softmax, however it handles the mask, stays finite.
    """
    u = rng.standard_normal(d)
    u *= 1.5 * np.sqrt(d) / np.linalg.norm(u)
    return c * u + rng.standard_normal((n_q, d)), c * u + 0.05 * rng.standard_normal((n_k, d))


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

    slice_ = x((3, 5))
    slice_[1] += 5000.0  # one huge slice among easy ones
    return (
        Probe("1d", (x((5,)), -1)),
        Probe("2d", (x((3, 4)), -1)),
        Probe("2d-axis0", (x((3, 4)), 0), frozenset({"axis"})),
        Probe("2d-axis-2", (x((3, 4)), -2), frozenset({"axis"})),
        Probe("2d-square", (x((4, 4)), -1), frozenset({"square"})),
        Probe("3d", (x((2, 3, 4)), -1)),
        Probe("3d-axis1", (x((2, 3, 4)), 1), frozenset({"axis"})),
        Probe("4d", (x((2, 2, 3, 3)), -1)),
        Probe("large-offset", (1000.0 + 5.0 * rng.standard_normal((3, 4)), -1), LARGE),
        Probe("large-spread", (rng.uniform(-2000.0, 2000.0, (3, 5)), -1), LARGE),
        Probe("large-slice", (slice_, -1), LARGE),
        Probe("large-axis0", (1000.0 + 5.0 * rng.standard_normal((4, 3)), 0), LARGE),
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
        # a batch of one: weights.T @ V runs (and gives its own output)
        Probe("3d-batch1", wv((1, 3, 3), (1, 3, 2)), frozenset({"square"})),
        Probe("4d", wv((2, 2, 2, 3), (2, 2, 3, 4))),
    )


def _probes_step5() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1005)
    n = rng.standard_normal

    def qkv(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
            scale: float = 1.0) -> tuple[np.ndarray, ...]:
        return scale * n(q), scale * n(k), n(v)

    Q, K = _aligned(rng, 3, 4, 5)
    Qs, Ks = _aligned(rng, 4, 4, 3)
    Qe, Ke, Ve = qkv((3, 4), (5, 4), (5, 2))
    Ke[:] = 60.0 * rng.standard_normal(4) + 0.05 * Ke
    Qe[1] = Ke[0] + rng.standard_normal(4)  # one query with huge scores among easy ones
    return (
        Probe("2d", qkv((2, 5), (3, 5), (3, 4))),
        Probe("2d-square", qkv((4, 3), (4, 3), (4, 5)), frozenset({"square"})),
        Probe("2d-dk1", qkv((3, 1), (4, 1), (4, 2)), frozenset({"unscaled"})),
        Probe("3d", qkv((2, 3, 6), (2, 5, 6), (2, 5, 2))),
        Probe("3d-square", qkv((2, 3, 4), (2, 3, 4), (2, 3, 5)), frozenset({"square"})),
        Probe("3d-kt", qkv((3, 1, 3), (3, 3, 3), (3, 3, 2)), frozenset({"transpose"})),
        # K.T runs with several queries too: a softmax over axis 1 still sees the scores
        Probe("3d-kt-b", qkv((3, 2, 3), (3, 3, 3), (3, 3, 2)), frozenset({"transpose"})),
        Probe("4d", qkv((2, 2, 3, 4), (2, 2, 2, 4), (2, 2, 2, 5))),
        Probe("large", (Q, K, n((4, 3))), LARGE),
        Probe("large-slice", (Qe, Ke, Ve), LARGE),
        # n_q == n_k == d_v: K Q^T and weights^T run here too
        Probe("large-square", (Qs, Ks, n((4, 4))), LARGE),
        *_moved_last("causal", (n((4, 3)), n((4, 3)), n((4, 2))), (1, 2), rng),
        # n_q == n_k at 4-D too: code whose own (n, n) causal mask needs n_q == n_k runs here
        Probe("4d-square", qkv((2, 1, 3, 4), (2, 1, 3, 4), (2, 1, 3, 2)), frozenset({"square"})),
    )


def _moved_last(name: str, args: tuple[Any, ...], which: tuple[int, ...],
                rng: np.random.Generator) -> tuple[Probe, Probe, Probe]:
    """The causality probe: an input, the same input with only the last position of the
    arrays `which` (keys and values, or Z) changed, and with only the first changed. A
    query before the last one must see the last change; code with a causal mask of its
    own does not, though its later queries see the first change (code whose rows never
    mix, which sees no other position at all, does not)."""
    out = [Probe(name, args, CAUSAL_PAIR)]
    for position, suffix in ((-1, MOVED), (0, FIRST)):
        moved = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        for i in which:
            moved[i][..., position, :] = 2.0 * rng.standard_normal(moved[i].shape[-1])
        out.append(Probe(name + suffix, tuple(moved), CAUSAL_PAIR))
    return out[0], out[1], out[2]


def _probes_step6() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1006)
    n = rng.standard_normal

    def qkvm(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
             mask: np.ndarray | tuple[int, ...], scale: float = 1.0) -> tuple[np.ndarray, ...]:
        m = mask if isinstance(mask, np.ndarray) else _mask(rng, mask)
        return scale * n(q), scale * n(k), n(v), m

    causal = np.tril(np.ones((4, 4), dtype=bool))
    Q, K = _aligned(rng, 3, 4, 5)
    Qs, Ks = _aligned(rng, 4, 4, 3)
    Qe, Ke, Ve, Me = qkvm((3, 4), (5, 4), (5, 2), (3, 5))
    Ke[:] = 60.0 * rng.standard_normal(4) + 0.05 * Ke
    Qe[1] = Ke[0] + rng.standard_normal(4)
    other = np.random.default_rng(2006).standard_normal  # the probes above keep their draws
    Qm, Km, Vm = other((3, 4)), other((5, 4)), other((5, 3))
    mask_a = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 0, 1], [1, 0, 1, 1, 0]], dtype=bool)
    mask_b = ~mask_a
    return (
        Probe("2d", qkvm((3, 5), (4, 5), (4, 2), (3, 4))),
        Probe("2d-causal", qkvm((4, 3), (4, 3), (4, 5), causal), frozenset({"square"})),
        Probe("2d-square", qkvm((3, 4), (3, 4), (3, 2), (3, 3)), frozenset({"square"})),
        Probe("2d-all-true", qkvm((3, 4), (5, 4), (5, 2), np.ones((3, 5), dtype=bool))),
        Probe("2d-dk1", qkvm((3, 1), (4, 1), (4, 2), (3, 4)), frozenset({"unscaled"})),
        Probe("3d-shared-mask", qkvm((2, 3, 6), (2, 5, 6), (2, 5, 2), (3, 5))),
        Probe("3d", qkvm((2, 3, 5), (2, 4, 5), (2, 4, 3), (2, 3, 4))),
        # batch == d_k == n_k: K.T runs (np.dot(Q, K.T) too, with a one-row mask) ...
        Probe("3d-kt", qkvm((3, 1, 3), (3, 3, 3), (3, 3, 2), np.array([[True, False, True]])),
              frozenset({"transpose"})),
        # ... and here each of the mask and its inverse lets some query see two keys,
        # so the scores matter with either reading of the mask
        Probe("3d-kt-b", qkvm((3, 2, 3), (3, 3, 3), (3, 3, 2),
                              np.array([[True, False, True], [False, True, False]])),
              frozenset({"transpose"})),
        # ... and here two queries may see the same key: a softmax over the queries
        # (axis=1 written for a matrix) sees the scores too
        Probe("3d-kt-c", qkvm((3, 2, 3), (3, 3, 3), (3, 3, 2),
                              np.array([[True, True, False], [True, False, True]])),
              frozenset({"transpose"})),
        Probe("4d-shared-mask", qkvm((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 2), (3, 5))),
        Probe("4d", qkvm((2, 1, 2, 3), (2, 1, 4, 3), (2, 1, 4, 5), (2, 1, 2, 4))),
        Probe("large", (Q, K, n((4, 2)), _mask(rng, (3, 4))), LARGE),
        Probe("large-slice", (Qe, Ke, Ve, Me), LARGE),
        Probe("large-square", (Qs, Ks, n((4, 4)), _mask(rng, (4, 4))), LARGE),
        # every key allowed: a causal mask of the learner's own shows alone
        *_moved_last("causal", (n((4, 3)), n((4, 3)), n((4, 2)), np.ones((4, 4), dtype=bool)), (1, 2), rng),
        # the mask probe: one input under two masks that block different keys
        Probe("mask", (Qm, Km, Vm, mask_a), MASK_PAIR),
        Probe("mask" + MOVED, (Qm, Km, Vm, mask_b), MASK_PAIR),
        Probe("4d-square", (other((2, 1, 3, 4)), other((2, 1, 3, 4)), other((2, 1, 3, 2)),
                            _mask(np.random.default_rng(2007), (3, 3))), frozenset({"square"})),
    )


def _probes_step7() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1007)
    n = rng.standard_normal

    def zw(z: tuple[int, ...], d_k: int, d_v: int, scale: float = 0.6) -> tuple[np.ndarray, ...]:
        d_model = z[-1]
        return n(z), scale * n((d_model, d_k)), scale * n((d_model, d_k)), scale * n((d_model, d_v))

    def aligned(n_: int, d_model: int, d_k: int, d_v: int) -> tuple[np.ndarray, ...]:
        W_q = n((d_model, d_k))
        u = np.linalg.svd(W_q)[0][:, 0]  # the direction W_q stretches most
        Z = 120.0 * u + 0.02 * n((n_, d_model))
        return Z, W_q, W_q + 0.05 * n((d_model, d_k)), n((d_model, d_v))

    return (
        Probe("2d", zw((3, 4), 5, 2)),
        Probe("2d-same-width", zw((4, 5), 3, 3)),
        Probe("2d-dk1", zw((3, 4), 1, 2), frozenset({"unscaled"})),
        Probe("3d", zw((2, 3, 4), 6, 2)),
        Probe("3d-same-width", zw((2, 4, 3), 2, 2)),
        Probe("3d-kt", zw((3, 3, 4), 3, 2), frozenset({"transpose"})),
        # d_k == d_v too: K.T still runs when the projections are mixed up
        Probe("3d-kt-same", zw((3, 3, 4), 3, 3), frozenset({"transpose"})),
        Probe("4d", zw((2, 2, 3, 4), 5, 3)),
        Probe("large", aligned(4, 3, 2, 3), LARGE),
        Probe("large-wide", aligned(3, 4, 5, 2), LARGE),
        *_moved_last("causal", zw((4, 3), 3, 2), (0,), rng),
    )


def _probes_step8() -> tuple[Probe, ...]:
    rng = np.random.default_rng(1008)
    n = rng.standard_normal

    def zw(z: tuple[int, ...], n_heads: int, scale: float = 0.5) -> tuple[Any, ...]:
        d = z[-1]
        return (n(z), scale * n((d, d)), scale * n((d, d)), scale * n((d, d)), scale * n((d, d)),
                n_heads)

    eye = zw((4, 6), 2)
    eye = (*eye[:4], np.eye(6), 2)

    def aligned(n_: int, d: int, n_heads: int) -> tuple[Any, ...]:
        d_h = d // n_heads
        W_q = n((d, d))
        # a Z that every head's block of W_q stretches: large scores in every head
        u = sum(np.linalg.svd(W_q[:, h * d_h:(h + 1) * d_h])[0][:, 0] for h in range(n_heads))
        Z = 150.0 * u / np.linalg.norm(u) + 0.02 * n((n_, d))
        return Z, W_q, W_q + 0.05 * n((d, d)), n((d, d)), n((d, d)), n_heads

    return (
        Probe("2d", zw((3, 6), 2)),
        Probe("2d-3-heads", zw((4, 6), 3)),
        Probe("2d-1-head", zw((3, 4), 1), frozenset({"one-head"})),
        Probe("2d-wo-eye", eye),
        # n == d_h == n_heads: here heads stacked on a batch axis with K.T run
        Probe("2d-cube-heads", zw((3, 9), 3), frozenset({"transpose"})),
        Probe("3d", zw((2, 3, 4), 2)),
        # batch == n == d_h: here a per-head K.T runs
        Probe("3d-kt", zw((3, 3, 6), 2), frozenset({"transpose"})),
        Probe("4d", zw((2, 2, 3, 6), 3)),
        Probe("large", aligned(4, 4, 2), LARGE),
        Probe("large-3-heads", aligned(3, 6, 3), LARGE),
        *_moved_last("causal", zw((4, 4), 2), (0,), rng),
        *_other_head(rng),
    )


def _other_head(rng: np.random.Generator) -> tuple[Probe, Probe]:
    """The head probe: W_o = I, then only head 1's columns of W_q, W_k and W_v changed.
    Head 0's output (the first d_h columns) must not change."""
    n = rng.standard_normal
    Z, W = n((3, 4)), [0.5 * n((4, 4)) for _ in range(3)]
    moved = [w.copy() for w in W]
    for w in moved:
        w[:, 2:] = 0.5 * n((4, 2))
    return (Probe("heads", (Z, *W, np.eye(4), 2), HEAD_PAIR),
            Probe("heads" + MOVED, (Z, *moved, np.eye(4), 2), HEAD_PAIR))


TWIN = "-twin"


def _with_twins(probes: tuple[Probe, ...]) -> tuple[Probe, ...]:
    """Each large probe followed by its small twin: the same input scaled down.

    NaN where the large probe has it and the twin does not is an overflow; NaN in
    both (a fully blocked row, say) is some other mistake.
    """
    out: list[Probe] = []
    for p in probes:
        out.append(p)
        if "large" in p.tags:
            args = tuple(a / max(1.0, float(np.max(np.abs(a))) / 2.0)
                         if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in p.args)
            out.append(Probe(p.name + TWIN, args, frozenset({"twin"})))
    return tuple(out)


def _frozen(probes: tuple[Probe, ...]) -> tuple[Probe, ...]:
    """Make every probe array read-only: they are shared by every diagnosis."""
    probes = _with_twins(probes)
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

__all__ = ["CAUSAL_PAIR", "HEAD_PAIR", "LARGE", "MASK_PAIR", "FIRST", "MOVED", "PROBES", "TWIN", "Probe"]
