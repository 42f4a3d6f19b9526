"""How far a correct float32 answer may drift, per step: the sum of |terms| behind each entry.

Rounding error grows with the magnitudes that were added up, not with the
result (a sum of large terms that cancel is still rounded at their size), so
float32 tolerances are taken relative to these scales (`StepContext.compare`
uses max(|expected|, scale)). One function per step, all in float64.

From step 5 on, a second source of error is added: the scores. Each is a
dot product of length d_k, rounded by about sqrt(d_k) units at the size of
|q|.|k| in the order the learner's NumPy happens to sum (einsum, BLAS and a
loop all differ), and softmax hands a score's error on to the output in
proportion to how far each value lies from the output. On large positive
scores over d_k = 4096 that is far more than the step's measured rtol, and
no one summation order (the reference's) can stand in for every correct one.
That term (`score_allowance`) is in the input's own unit roundoff, so
float64 input is judged as tightly as ever.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attn_practice.reference import attention as R


def _f64(*arrays: Any) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _weights(Q: np.ndarray, K: np.ndarray, mask: Any = None) -> np.ndarray:
    """The reference attention weights (stable softmax of the scaled, masked scores)."""
    s = R.dot_scores(Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    return R.softmax(s, axis=-1)


def growth(n: int) -> float:
    """Unit roundoffs a correct length-`n` dot product may be off by, relative to sum |terms|.

    A sequential float32 sum of positive terms (a loop, or einsum) drifts by
    about sqrt(n) units (`bench/float32_precision.py --scores` measures it);
    twice that, plus a few for the division by sqrt(d_k), the shift and exp.
    """
    return 2.0 * math.sqrt(max(n, 1)) + 4.0


def has_float32(args: Sequence[Any]) -> bool:
    """Whether the input is judged at float32's precision (any float32 array among `args`)."""
    return any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)


def _unit_roundoff(args: tuple[Any, ...]) -> float:
    """The input's own precision: float32's when any float input is float32."""
    return float(np.finfo(np.float32 if has_float32(args) else np.float64).eps) / 2


#: Beyond this many (query, key, value column) triples, the value spread is bounded
#: per query instead of per key (looser, but no array of that size is made).
_SPREAD_LIMIT = 1 << 22


def _through_softmax(A: np.ndarray, w: np.ndarray, V: np.ndarray) -> np.ndarray:
    """How far the output can move when each score s_ij moves by up to A_ij (absolute).

    softmax turns score errors ds into weight errors w_j (ds_j - sum_k w_k ds_k),
    and the output moves by sum_j dw_j (v_j - o): so at most
    sum_j w_ij (A_ij + sum_k w_ik A_ik) |v_j - o_i| per output entry.
    """
    o = w @ V
    c = w * (A + np.sum(w * A, axis=-1, keepdims=True))
    if c.size * V.shape[-1] <= _SPREAD_LIMIT:
        spread = np.abs(V[..., None, :, :] - o[..., :, None, :])  # (..., n_q, n_k, d_v)
        return np.einsum("...qk,...qkv->...qv", c, spread)
    return c @ np.abs(V) + np.sum(c, axis=-1, keepdims=True) * np.abs(o)


def _step1(Q: Any, K: Any) -> np.ndarray:
    Q, K = _f64(Q, K)
    return np.abs(Q) @ np.swapaxes(np.abs(K), -1, -2)


def _step4(weights: Any, V: Any) -> np.ndarray:
    weights, V = _f64(weights, V)
    return np.abs(weights) @ np.abs(V)


def _step5(Q: Any, K: Any, V: Any, mask: Any = None) -> np.ndarray:
    Q, K, V = _f64(Q, K, V)
    return _weights(Q, K, mask) @ np.abs(V)


def _step5_scores(Q: Any, K: Any, V: Any, mask: Any = None) -> np.ndarray:
    Q, K, V = _f64(Q, K, V)
    d_k = Q.shape[-1]
    A = growth(d_k) * (np.abs(Q) @ np.swapaxes(np.abs(K), -1, -2)) / math.sqrt(max(d_k, 1))
    return _through_softmax(A, _weights(Q, K, mask), V)


def _step7(Z: Any, W_q: Any, W_k: Any, W_v: Any) -> np.ndarray:
    Z, W_q, W_k, W_v = _f64(Z, W_q, W_k, W_v)
    return _weights(Z @ W_q, Z @ W_k) @ (np.abs(Z) @ np.abs(W_v))


def _projected_scores(Z: np.ndarray, W_q: np.ndarray, W_k: np.ndarray) -> np.ndarray:
    """What the scores (Z W_q)(Z W_k)^T / sqrt(d_k) may be off by: both projections and the product."""
    d_model, d_k = Z.shape[-1], W_q.shape[-1]
    Qm, Km = np.abs(Z) @ np.abs(W_q), np.abs(Z) @ np.abs(W_k)
    return ((2 * growth(d_model) + growth(d_k)) / math.sqrt(max(d_k, 1))
            * (Qm @ np.swapaxes(Km, -1, -2)))


def _step7_scores(Z: Any, W_q: Any, W_k: Any, W_v: Any) -> np.ndarray:
    Z, W_q, W_k, W_v = _f64(Z, W_q, W_k, W_v)
    return _through_softmax(_projected_scores(Z, W_q, W_k), _weights(Z @ W_q, Z @ W_k), Z @ W_v)


def _per_head(W_o: np.ndarray, n_heads: int, d_model: int,
              head: Callable[[slice], np.ndarray]) -> np.ndarray:
    """`head(cols)` for each head's columns, side by side, then @ |W_o|."""
    d_h = d_model // n_heads
    return np.concatenate([head(slice(h * d_h, (h + 1) * d_h)) for h in range(n_heads)], axis=-1) @ np.abs(W_o)


def _step8(Z: Any, W_q: Any, W_k: Any, W_v: Any, W_o: Any, n_heads: int) -> np.ndarray:
    """Each head's weighted |Z| @ |W_v| columns, then @ |W_o|."""
    Z, W_q, W_k, W_v, W_o = _f64(Z, W_q, W_k, W_v, W_o)
    Q, K, V_mag = Z @ W_q, Z @ W_k, np.abs(Z) @ np.abs(W_v)
    return _per_head(W_o, n_heads, Z.shape[-1],
                     lambda c: _weights(Q[..., c], K[..., c]) @ V_mag[..., c])


def _step8_scores(Z: Any, W_q: Any, W_k: Any, W_v: Any, W_o: Any, n_heads: int) -> np.ndarray:
    """Each head's score term (as step 7's, on its columns), then @ |W_o|."""
    Z, W_q, W_k, W_v, W_o = _f64(Z, W_q, W_k, W_v, W_o)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return _per_head(W_o, n_heads, Z.shape[-1], lambda c: _through_softmax(
        _projected_scores(Z, W_q[:, c], W_k[:, c]), _weights(Q[..., c], K[..., c]), V[..., c]))


_SCALES: dict[str, Callable[..., np.ndarray]] = {
    "step1": _step1, "step4": _step4, "step5": _step5, "step6": _step5, "step7": _step7,
    "step8": _step8,
}
#: The score term (see the module's docstring), in absolute output units per unit roundoff.
_SCORES: dict[str, Callable[..., np.ndarray]] = {
    "step5": _step5_scores, "step6": _step5_scores, "step7": _step7_scores, "step8": _step8_scores,
}


def rounding_scale(step_id: str, args: tuple[Any, ...]) -> np.ndarray | None:
    """The per-entry scale for `step_id`'s output on `args` (None: |expected| is the scale)."""
    fn = _SCALES.get(step_id)
    return None if fn is None else fn(*args)


def has_scale(step_id: str) -> bool:
    """Whether `rounding_scale` gives `step_id` a scale of its own (else None)."""
    return step_id in _SCALES


def score_allowance(step_id: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
                    ) -> np.ndarray | None:
    """What rounding the scores may add to each output entry, absolute (None: nothing to add).

    In the input's own unit roundoff, so float64 input gets next to nothing.
    Only asked for where an answer misses the step's tolerance (it costs a
    few reference-sized products), and never raises: no allowance is the safe side.
    """
    fn = _SCORES.get(step_id)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            extra = fn(*args, **(kwargs or {})) * _unit_roundoff(args)
    except Exception:  # noqa: BLE001 - inputs outside the contract: judged without the allowance
        return None
    return np.nan_to_num(extra, nan=0.0, posinf=0.0)


__all__ = ["growth", "has_float32", "has_scale", "rounding_scale", "score_allowance"]
