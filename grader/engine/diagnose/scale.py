"""`wrong-scale` fitted: the learner's output is the right computation with the
scores multiplied by some factor r that is neither 1/sqrt(d_k) nor a factor
with its own id (1, 1/d_k, sqrt(d_k), 1/sqrt(d_v), 1/sqrt(d_model)).

Divisors come in endless spellings (a sequence length, a constant, another
power of d_k), so instead of listing them the factor is fitted per input.
The scale probe (`measured_scale`, issue 39) fits one law c * d_k**p across
the matrix inputs (a temperature is p = 0), also on top of another reading (a
causal mask), so that the fitted factor can pair with other mistakes
(`K.T`); where no law fits (math.isqrt(d_k), sqrt(d_model)), the divisor at
each width is measured instead (`measured_divisors`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import MATCH, Obs, close, differs
from attn_practice.grader.engine.diagnose.readings import compute


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


def _scale_outcome(step: str, o: Obs) -> str:
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
        if not close(o.out, g(np.array([r]))[0], MATCH):
            return "contradicts"
        if any(abs(math.log(r / s)) < 1e-3 for s in specials) or any(
                close(o.out, out, MATCH) for out in g(np.array(specials))):
            return "consistent"  # the right factor, or one with its own id
        # not merely a limit: all-equal weights (r -> 0) or a hard max (r -> inf)
        if step != "step2":
            for limit in g(np.array([1e-9, 1e9])):
                if close(o.out, limit, MATCH):
                    return "contradicts"
    return "support"


def fit_scale(step: str, obs: Sequence[Obs]) -> int:
    """How many inputs a fitted wrong factor explains (0: it does not fit them all)."""
    support = 0
    on_probe = False
    for o in obs:
        verdict = _scale_outcome(step, o)
        if verdict == "contradicts":
            return 0
        if verdict == "support":
            support += 1
            on_probe = on_probe or o.probe
    return support if on_probe else 0


def _width(step: str, args: Sequence[Any]) -> int:
    """The d_k (d_h in step 8) the right factor is 1/sqrt of."""
    if step == "step2":
        return int(args[1])
    if step == "step7":
        return int(np.shape(args[1])[-1])
    if step == "step8":
        return int(np.shape(args[0])[-1]) // int(args[5])
    return int(np.shape(args[0])[-1])


#: Factors c * d_k**p that have their own id (or are right): (c, p).
_NAMED = ((1.0, -0.5), (1.0, 0.0), (1.0, -1.0), (1.0, 0.5))


def _reading_family(step: str, args: Sequence[Any], base: Mapping[str, Any]) -> _Family:
    """The output of the reading `base` with the score factor r, for a batch of factors."""
    def g(r: np.ndarray) -> np.ndarray:  # ("fit", c, 0) multiplies the scores by c itself
        return np.stack([compute(step, {**base, "scale": ("fit", float(x), 0.0)}, tuple(args)) for x in r])

    return g


def _factor_points(step: str, obs: Sequence[Obs],
                   base: Mapping[str, Any] | None) -> tuple[list[tuple[int, float, tuple[int, ...]]], bool]:
    """(d_k, the factor r the answer shows) for every matrix input whose answer is the
    computation `base` (default the right one) with some factor; and whether one is wrong."""
    points: list[tuple[int, float, tuple[int, ...]]] = []
    wrong = False
    for o in obs:
        if (o.rank != 2 and step != "step2") or o.large or "twin" in o.tags or o.out is None \
                or o.out.shape != o.ref.shape or not np.all(np.isfinite(o.out)):
            continue  # a large probe's twin has near-equal scores: near-uniform weights fit anything
        if base:
            g = _reading_family(step, o.args, base)
        else:
            family = _scale_family(step, o.args)
            if family is None:
                return [], False
            g = family[0]
        with np.errstate(all="ignore"):
            try:
                r = _fit_factor(g, o.out)
            except Exception:  # noqa: BLE001 - a reading that cannot run here measures nothing
                continue
            if not (_R_MIN < r < _R_MAX) or not close(o.out, g(np.array([r]))[0], MATCH):
                continue
            if step != "step2" and any(not differs(o.out, lim) for lim in g(np.array([1e-9, 1e9]))):
                continue  # (nearly) all-equal weights or a hard max: any tiny or huge factor fits
        points.append((_width(step, o.args), r, _widths(step, o.args)))
        wrong = wrong or not o.right
    return points, wrong


def _widths(step: str, args: Sequence[Any]) -> tuple[int, ...]:
    """d_k, and d_model where there is one (a divisor may come from either)."""
    if step in ("step7", "step8"):
        return _width(step, args), int(np.shape(args[0])[-1])
    return (_width(step, args),)


def measured_scale(step: str, obs: Sequence[Obs], base: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The scale probe: the factor the learner's scores are multiplied by, as c * d_k**p.

    Fitted on every matrix input whose answer is the right computation with some
    factor (a `K.T` is right on a matrix, so the factor shows beside it): a
    hard-coded temperature is p = 0. None unless inputs of three widths or more
    (one of them answered wrong) show a factor, when no single law fits them all,
    or when the law has its own id. `base`: a reading the factor is fitted on
    (a causal mask of the learner's own), default the right computation.
    """
    found, wrong = _factor_points(step, obs, base)
    # a law c * d_k**p is evidence only where it could have failed: three widths at least
    if not wrong or len({w for w, _, _ in found}) < 3:
        return None
    xs, ys = np.log(np.array([(w, r) for w, r, _ in found], dtype=float)).T
    p = float(np.polyfit(xs, ys, 1)[0])
    c = float(np.mean(ys - p * xs))
    if np.max(np.abs(ys - (c + p * xs))) > 1e-3:
        return None
    c = math.exp(c)
    if any(abs(c - nc) < 1e-3 and abs(p - np_) < 1e-3 for nc, np_ in _NAMED):
        return None
    return {"scale": ("fit", round(c, 6), round(p, 6))}


def measured_divisors(step: str, obs: Sequence[Obs]) -> dict[tuple[int, ...], float] | None:
    """(d_k[, d_model]) -> what the learner divides the scores by there, where no law
    c * d_k**p fits (math.isqrt(d_k), sqrt(d_model)): one divisor per width, two widths at
    least, and somewhere not one with its own id (sqrt(d_k), 1, d_k, 1/sqrt(d_k))."""
    found, wrong = _factor_points(step, obs, None)
    by_width: dict[tuple[int, ...], float] = {}
    for _, r, ws in found:
        if abs(math.log(by_width.setdefault(ws, 1 / r) * r)) > 1e-3:
            return None  # two divisors at one width: something else changes it
    if not wrong or len(by_width) < 2:
        return None

    def named(w: int, d: float) -> bool:
        return any(abs(math.log(d / x)) < 1e-3 for x in (math.sqrt(w), 1.0, w, 1 / math.sqrt(w)))

    if all(named(ws[0], d) for ws, d in by_width.items()):
        return None
    return dict(sorted(by_width.items()))


__all__ = ["fit_scale", "measured_divisors", "measured_scale"]
