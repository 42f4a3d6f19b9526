"""How far a correct float32 answer may drift, per step: the sum of |terms| behind each entry.

Rounding error grows with the magnitudes that were added up, not with the
result (a sum of large terms that cancel is still rounded at their size), so
float32 tolerances are taken relative to these scales (`StepContext.compare`
uses max(|expected|, scale)). One function per step, all in float64.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _step1(Q: Any, K: Any) -> np.ndarray:
    Q, K = _f64(Q, K)
    return np.abs(Q) @ np.swapaxes(np.abs(K), -1, -2)


def _step4(weights: Any, V: Any) -> np.ndarray:
    weights, V = _f64(weights, V)
    return np.abs(weights) @ np.abs(V)


def _step5(Q: Any, K: Any, V: Any, mask: Any = None) -> np.ndarray:
    Q, K, V = _f64(Q, K, V)
    return _weights(Q, K, mask) @ np.abs(V)


def _step7(Z: Any, W_q: Any, W_k: Any, W_v: Any) -> np.ndarray:
    Z, W_q, W_k, W_v = _f64(Z, W_q, W_k, W_v)
    return _weights(Z @ W_q, Z @ W_k) @ (np.abs(Z) @ np.abs(W_v))


def _step8(Z: Any, W_q: Any, W_k: Any, W_v: Any, W_o: Any, n_heads: int) -> np.ndarray:
    """Each head's weighted |Z| @ |W_v| columns, then @ |W_o|."""
    Z, W_q, W_k, W_v, W_o = _f64(Z, W_q, W_k, W_v, W_o)
    d_h = Z.shape[-1] // n_heads
    Q, K, V_mag = Z @ W_q, Z @ W_k, np.abs(Z) @ np.abs(W_v)
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        heads.append(_weights(Q[..., cols], K[..., cols]) @ V_mag[..., cols])
    return np.concatenate(heads, axis=-1) @ np.abs(W_o)


_SCALES: dict[str, Callable[..., np.ndarray]] = {
    "step1": _step1, "step4": _step4, "step5": _step5, "step6": _step5, "step7": _step7,
    "step8": _step8,
}


def rounding_scale(step_id: str, args: tuple[Any, ...]) -> np.ndarray | None:
    """The per-entry scale for `step_id`'s output on `args` (None: |expected| is the scale)."""
    fn = _SCALES.get(step_id)
    return None if fn is None else fn(*args)


__all__ = ["rounding_scale"]
