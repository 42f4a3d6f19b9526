"""`wrong-scale` fitted: the learner's output is the right computation with the
scores multiplied by some factor r that is neither 1/sqrt(d_k) nor a factor
with its own id (1, 1/d_k, sqrt(d_k), 1/sqrt(d_v), 1/sqrt(d_model)).

Divisors come in endless spellings (a sequence length, a constant, another
power of d_k), so instead of listing them the factor is fitted per input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import MATCH, Obs, close


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


__all__ = ["fit_scale"]
