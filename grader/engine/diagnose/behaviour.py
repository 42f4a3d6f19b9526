"""Behavioural probes: properties of the learner's function, measured directly.

The readings (`readings.py`) name mistakes somebody modelled. These
measurements hold for code nobody modelled, because each compares the
learner's answers on two inputs that differ in one thing (`probes.py` pairs
them: a probe and its "-moved" twin):

* causality (steps 5-8; step 6 with a mask that allows every key): does a
  query's output change when only the last key and value (the last row of Z)
  change? Under a causal mask of the learner's own it does not, while later
  queries do see a change of the first key (code that mixes no positions at
  all is not causal attention).
* mask sensitivity (step 6): one input under a mask and its complement. The
  same answer under both: `mask` is ignored; each answer the right one for the
  other mask: `mask` is inverted.
* head independence (step 8, W_o = I): does head 0's output (the first d_h
  columns) change when only head 1's columns of W_q, W_k and W_v change?
* rank support (every step): which numbers of dimensions give right answers,
  wrong answers, or an error (`rank_support`).
* the scale constant: `scale.measured_scale` (a hard-coded temperature,
  math.isqrt, sqrt(d_model)).

Each finding carries the catalogue id it maps to where one fits, and always a
sentence in plain words: `diagnose` names the id, or, where none fits, shows
the sentence. A probe that the grader's limits stopped twice (a loaded
machine) is reported as not measured, never silently dropped.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import FAILING, MATCH, Obs, close, differs
from attn_practice.grader.engine.diagnose.probes import FIRST, MOVED
from attn_practice.grader.engine.diagnose.readings import compute


class Property(enum.Enum):
    """What a behavioural probe measured."""

    CAUSAL = "causal"
    MASK_IGNORED = "mask-ignored"
    MASK_INVERTED = "mask-inverted"
    HEADS_MIXED = "heads-mixed"
    RANKS = "ranks"
    SCALE = "scale"
    NOT_MEASURED = "not-measured"


@dataclass(frozen=True)
class Finding:
    """One measured property: the id it maps to (None where none fits) and plain words."""

    prop: Property
    text: str
    id: str | None = None
    #: the reading this property is, where it is one (a scale factor is fitted on top of it)
    reading: Mapping[str, Any] | None = None


def _pair(obs: Sequence[Obs], name: str, suffix: str = MOVED) -> tuple[Obs, Obs] | None:
    """The probe `name` and its moved twin, both answered with the reference's shape."""
    by_name = {o.name: o for o in obs if o.probe}
    a, b = by_name.get(name), by_name.get(name + suffix)
    if a is None or b is None or a.out is None or b.out is None:
        return None
    if a.out.shape != a.ref.shape or b.out.shape != b.ref.shape:
        return None
    if not (np.all(np.isfinite(a.out)) and np.all(np.isfinite(b.out))):
        return None
    return a, b


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return close(x, y, MATCH)


def causal(step: str, obs: Sequence[Obs]) -> Finding | None:
    """Every query but the last answers the same when only the last key changes; the last does not."""
    pair, first = _pair(obs, "causal"), _pair(obs, "causal", FIRST)
    if pair is None or first is None:
        return None
    a, b = pair
    if not (differs(a.ref[:-1], b.ref[:-1]) and _same(a.out[:-1], b.out[:-1])
            and differs(a.out[-1:], b.out[-1:])):
        return None
    if not differs(a.out[1:], first[1].out[1:]):
        return None  # no query sees another position: no attention to speak of, causal or not
    n = a.out.shape[0]
    changed = "key and value" if step in ("step5", "step6") else "row of Z (its key and value)"
    given = ("though the mask given allows every key" if step == "step6"
             else "though no mask was given")
    return Finding(Property.CAUSAL,
                   f"Measured: your output for queries 0 to {n - 2} stays the same when only the last "
                   f"{changed} change, {given}: each query sees only the keys up to its own "
                   "position, as under a causal mask.",
                   "causal-mask-hardcoded", {"mask": "causal"})


def mask_sensitivity(obs: Sequence[Obs]) -> Finding | None:
    """Step 6: one input under a mask and under its complement."""
    pair = _pair(obs, "mask")
    if pair is None:
        return None
    a, b = pair
    keys = _pair(obs, "causal")  # the same answer whatever the keys are is not about the mask
    responds = keys is not None and differs(keys[0].out, keys[1].out)
    if responds and _same(a.out, b.out) and differs(a.ref, b.ref):
        return Finding(Property.MASK_IGNORED,
                       "Measured: your output is the same under a mask and under its opposite "
                       "(every pair blocked by one is allowed by the other): `mask` changes nothing.",
                       "mask-ignored", {"mask": "ignored"})
    if _same(a.out, b.ref) and _same(b.out, a.ref) and differs(a.ref, b.ref):
        return Finding(Property.MASK_INVERTED,
                       "Measured: under a mask your output is the right answer for the opposite mask.",
                       "mask-inverted")
    return None


#: Head readings (`readings._heads`) that mix heads, each with its id.
_HEAD_READINGS = (("heads-no-transpose", "no-transpose"), ("heads-not-split", "not-split"),
                  ("heads-not-split", "not-split-dh"), ("heads-concat-wrong-axis", "concat-rows"),
                  ("heads-concat-wrong-axis", "stack-last"), ("heads-concat-wrong-axis", "no-transpose-out"))


def head_independence(obs: Sequence[Obs]) -> Finding | None:
    """Step 8: head 0's columns change when only head 1's weights change."""
    pair = _pair(obs, "heads")
    if pair is None:
        return None
    a, b = pair
    d_h = a.out.shape[-1] // int(a.args[5])
    if _same(a.out[..., :d_h], b.out[..., :d_h]):
        return None
    # which way the heads are mixed: the head readings that give these very answers
    fits = set()
    for mid, variant in _HEAD_READINGS:
        with np.errstate(all="ignore"):
            try:
                if all(_same(o.out, compute("step8", {"heads": variant}, o.args)) for o in (a, b)):
                    fits.add(mid)
            except Exception:  # noqa: BLE001 - a reading that cannot run here does not fit
                continue
    return Finding(Property.HEADS_MIXED,
                   "Measured: with W_o = I, head 0's output (the first d_h columns) changes when only "
                   "head 1's columns of W_q, W_k and W_v change: each head must use its own columns only.",
                   fits.pop() if len(fits) == 1 else None)


def rank_support(obs: Sequence[Obs]) -> dict[int, str]:
    """Number of dimensions -> "right", "wrong" or "error" (the worst answer at that rank)."""
    out: dict[int, str] = {}
    order = {"right": 0, "wrong": 1, "error": 2}
    for o in obs:
        if not o.probe or o.large:
            continue
        kind = "right" if o.right else "error" if o.out is None else "wrong"
        have = out.get(o.rank)
        if have is None or order[kind] > order[have]:
            out[o.rank] = kind
    return dict(sorted(out.items()))


def rank_text(support: dict[int, str]) -> str | None:
    """Plain words for rank support, when ranks behave differently (else None)."""
    if len(set(support.values())) < 2:
        return None
    words = {"right": "gives right answers", "wrong": "gives wrong answers", "error": "raises an error"}
    parts = [f"{r}-D input {words[k]}" for r, k in support.items()]
    first_bad = next((r for r, k in support.items() if k != "right" and any(
        k2 == "right" for r2, k2 in support.items() if r2 < r)), None)
    where = f" (it first breaks at {first_bad}-D)" if first_bad is not None else ""
    return "Measured: " + "; ".join(parts) + where + "."


def scale_text(cfg: dict[str, object]) -> str:
    """Plain words for a measured factor c * d_k**p."""
    _, c, p = cfg["scale"]  # type: ignore[misc]
    c, p = float(c), float(p)  # type: ignore[arg-type]
    if abs(p) < 1e-3:
        return (f"Measured: your scores are divided by about {1 / c:.4g} whatever d_k is (a fixed "
                "temperature or constant); the divisor should be sqrt(d_k).")
    return (f"Measured: your scores are multiplied by about {c:.4g} * d_k^{p:.3g}; "
            "the factor should be 1/sqrt(d_k) = d_k^-0.5.")


def divisors_text(divisors: Mapping[tuple[int, ...], float]) -> str:
    """Plain words for the divisor measured at each d_k, where no single law fits."""
    def where(ws: tuple[int, ...]) -> str:
        return f"d_k = {ws[0]}" + (f" and d_model = {ws[1]}" if len(ws) > 1 else "")

    shown = [f"{d:.4g} where {where(ws)} (sqrt(d_k) = {math.sqrt(ws[0]):.4g})"
             for ws, d in list(divisors.items())[:3]]
    return "Measured: your scores are divided by " + ", by ".join(shown) + "."


def not_measured(names: Sequence[str]) -> Finding | None:
    """The probes that the grader's limits stopped even when retried alone."""
    if not names:
        return None
    what = sorted({n.removesuffix(MOVED) for n in names})
    return Finding(Property.NOT_MEASURED,
                   "Not measured: the grader's limits stopped your function on "
                   + ", ".join(f"the {w!r} input" if w == FAILING else f"the probe {w!r}" for w in what)
                   + ", even when retried alone; what those inputs would show is left out of this "
                   "diagnosis.")


def measure(step: str, obs: Sequence[Obs]) -> list[Finding]:
    """Every behavioural finding for `step` on these answers."""
    found: list[Finding] = []
    if step in ("step5", "step6", "step7", "step8"):
        f = causal(step, obs)
        if f is not None:
            found.append(f)
    if step == "step6":
        f = mask_sensitivity(obs)
        if f is not None:
            found.append(f)
    if step == "step8":
        f = head_independence(obs)
        if f is not None:
            found.append(f)
    return found


__all__ = ["Finding", "Property", "causal", "head_independence", "mask_sensitivity", "measure",
           "divisors_text", "not_measured", "rank_support", "rank_text", "scale_text"]
