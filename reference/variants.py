"""Correct implementations in many styles, per step.

`attn-practice selftest` sends each one to a sandbox as a learner file and
checks that the hidden suite passes it; `tests/test_diagnose.py` checks that
none of them earns a diagnosis. They cover the styles learners really use:
loops, einsum, tensordot, SciPy, log-sum-exp, nested lists as output.

The same rules as `mistakes.py`: each function is self-contained (only `np`
and `math` from the module, anything else imported inside the body), so its
source is a complete learner file once the `def` line is renamed.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable

import numpy as np

from attn_practice.reference.mistakes import learner_source


# =====================================================================
# step 1: dot_scores(Q, K)
# =====================================================================
def dot_scores__einsum(Q, K):
    return np.einsum("...qd,...kd->...qk", Q, K)


def dot_scores__loops(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    batch = Q.shape[:-2]
    out = np.zeros(batch + (Q.shape[-2], K.shape[-2]))
    for b in np.ndindex(*batch):
        for i in range(Q.shape[-2]):
            for j in range(K.shape[-2]):
                total = 0.0
                for d in range(Q.shape[-1]):
                    total += Q[b + (i, d)] * K[b + (j, d)]
                out[b + (i, j)] = total
    return out


def dot_scores__tensordot(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    batch = Q.shape[:-2]
    out = np.empty(batch + (Q.shape[-2], K.shape[-2]), dtype=np.result_type(Q, K))
    for b in np.ndindex(*batch):
        out[b] = np.tensordot(Q[b], K[b], axes=([1], [1]))
    return out


def dot_scores__broadcast_sum(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    return np.sum(Q[..., :, None, :] * K[..., None, :, :], axis=-1)


def dot_scores__list_of_lists(Q, K):
    return np.matmul(Q, np.swapaxes(K, -1, -2)).tolist()


# =====================================================================
# step 2: scale_scores(scores, d_k)
# =====================================================================
def scale_scores__np_sqrt(scores, d_k):
    return np.asarray(scores) / np.sqrt(d_k)


def scale_scores__math_sqrt(scores, d_k):
    return np.asarray(scores) / math.sqrt(d_k)


def scale_scores__power(scores, d_k):
    return np.asarray(scores) * d_k ** -0.5


def scale_scores__loops(scores, d_k):
    scores = np.asarray(scores)
    out = np.empty(scores.shape, dtype=scores.dtype)
    root = math.sqrt(d_k)
    for idx in np.ndindex(*scores.shape):
        out[idx] = scores[idx] / root
    return out


def scale_scores__list_of_lists(scores, d_k):
    return (np.asarray(scores) / np.sqrt(d_k)).tolist()


# =====================================================================
# step 3: softmax(x, axis=-1)
# =====================================================================
def softmax__max_shift(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax__logsumexp(x, axis=-1):
    # shift first: m + log(...) would lose the log term next to an x of 1e300
    s = np.asarray(x) - np.max(x, axis=axis, keepdims=True)
    return np.exp(s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True)))


def softmax__moveaxis_loops(x, axis=-1):
    x = np.asarray(x, dtype=float)
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape)
    for idx in np.ndindex(*moved.shape[:-1]):
        row = moved[idx]
        m = max(row)
        exps = [math.exp(v - m) for v in row]
        total = sum(exps)
        out[idx] = [e / total for e in exps]
    return np.moveaxis(out, -1, axis)


def softmax__apply_along_axis(x, axis=-1):
    def one(v):
        e = np.exp(v - np.max(v))
        return e / np.sum(e)

    return np.apply_along_axis(one, axis, np.asarray(x))


def softmax__scipy(x, axis=-1):
    from scipy.special import softmax as scipy_softmax

    return scipy_softmax(x, axis=axis)


def softmax__scipy_logsumexp(x, axis=-1):
    from scipy.special import logsumexp

    s = np.asarray(x) - np.max(x, axis=axis, keepdims=True)
    return np.exp(s - logsumexp(s, axis=axis, keepdims=True))


def softmax__list_of_lists(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).tolist()


# =====================================================================
# step 4: weighted_sum(weights, V)
# =====================================================================
def weighted_sum__matmul(weights, V):
    return np.matmul(weights, V)


def weighted_sum__einsum(weights, V):
    return np.einsum("...qk,...kd->...qd", weights, V)


def weighted_sum__loops(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    batch = weights.shape[:-2]
    n_q, n_k = weights.shape[-2:]
    out = np.zeros(batch + (n_q, V.shape[-1]))
    for b in np.ndindex(*batch):
        for i in range(n_q):
            for j in range(n_k):
                out[b + (i,)] += weights[b + (i, j)] * V[b + (j,)]
    return out


def weighted_sum__tensordot(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    batch = weights.shape[:-2]
    out = np.empty(batch + (weights.shape[-2], V.shape[-1]), dtype=np.result_type(weights, V))
    for b in np.ndindex(*batch):
        out[b] = np.tensordot(weights[b], V[b], axes=1)
    return out


def weighted_sum__broadcast_sum(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    return np.sum(weights[..., :, :, None] * V[..., None, :, :], axis=-2)


def weighted_sum__list_of_lists(weights, V):
    return (np.asarray(weights) @ np.asarray(V)).tolist()


# =====================================================================
# step 5: attention(Q, K, V)
# =====================================================================
def attention__vectorised(Q, K, V):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def attention__einsum(Q, K, V):
    Q = np.asarray(Q)
    scores = np.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", weights, V)


def attention__loops(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    batch = Q.shape[:-2]
    d_k = Q.shape[-1]
    out = np.zeros(batch + (Q.shape[-2], V.shape[-1]))
    for b in np.ndindex(*batch):
        for i in range(Q.shape[-2]):
            scores = [float(np.dot(Q[b + (i,)], K[b + (j,)])) / math.sqrt(d_k)
                      for j in range(K.shape[-2])]
            m = max(scores)
            exps = [math.exp(s - m) for s in scores]
            total = sum(exps)
            for j, e in enumerate(exps):
                out[b + (i,)] += (e / total) * V[b + (j,)]
    return out


def attention__logsumexp(Q, K, V):
    Q = np.asarray(Q)
    scores = np.matmul(Q, np.moveaxis(np.asarray(K), -1, -2)) / np.sqrt(Q.shape[-1])
    s = scores - scores.max(axis=-1, keepdims=True)
    return np.matmul(np.exp(s - np.log(np.exp(s).sum(axis=-1, keepdims=True))), V)


def attention__scipy(Q, K, V):
    from scipy.special import softmax as scipy_softmax

    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return scipy_softmax(scores, axis=-1) @ V


def attention__list_of_lists(Q, K, V):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) * Q.shape[-1] ** -0.5
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True) @ V).tolist()


# =====================================================================
# step 6: masked_attention(Q, K, V, mask)
# =====================================================================
def masked_attention__where_inf(Q, K, V, mask):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def masked_attention__big_negative(Q, K, V, mask):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def masked_attention__additive(Q, K, V, mask):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = scores + (1.0 - np.asarray(mask, dtype=float)) * -1e9
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def masked_attention__einsum(Q, K, V, mask):
    Q = np.asarray(Q)
    scores = np.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("...qk,...kv->...qv", e / e.sum(axis=-1, keepdims=True), V)


def masked_attention__loops(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), Q.shape[:-1] + (K.shape[-2],))
    batch = Q.shape[:-2]
    out = np.zeros(batch + (Q.shape[-2], V.shape[-1]))
    for b in np.ndindex(*batch):
        for i in range(Q.shape[-2]):
            allowed = [j for j in range(K.shape[-2]) if mask[b + (i, j)]]
            scores = [float(np.dot(Q[b + (i,)], K[b + (j,)])) / math.sqrt(Q.shape[-1])
                      for j in allowed]
            m = max(scores)
            exps = [math.exp(s - m) for s in scores]
            total = sum(exps)
            for j, e in zip(allowed, exps, strict=True):
                out[b + (i,)] += (e / total) * V[b + (j,)]
    return out


def masked_attention__scipy(Q, K, V, mask):
    from scipy.special import softmax as scipy_softmax

    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return scipy_softmax(np.where(mask, scores, -np.inf), axis=-1) @ V


def masked_attention__list_of_lists(Q, K, V, mask):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores[~np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)] = -np.inf
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True) @ V).tolist()


# =====================================================================
# step 7: self_attention(Z, W_q, W_k, W_v)
# =====================================================================
def self_attention__vectorised(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def self_attention__einsum(Z, W_q, W_k, W_v):
    Q = np.einsum("...nd,dk->...nk", Z, W_q)
    K = np.einsum("...nd,dk->...nk", Z, W_k)
    V = np.einsum("...nd,dv->...nv", Z, W_v)
    scores = np.einsum("...qk,...jk->...qj", Q, K) / math.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("...qj,...jv->...qv", e / e.sum(axis=-1, keepdims=True), V)


def self_attention__tensordot(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = np.tensordot(Z, W_q, axes=1)
    K = np.tensordot(Z, W_k, axes=1)
    V = np.tensordot(Z, W_v, axes=1)
    scores = np.matmul(Q, np.moveaxis(K, -1, -2)) / np.sqrt(Q.shape[-1])
    m = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - m - np.log(np.exp(scores - m).sum(axis=-1, keepdims=True)))
    return np.matmul(weights, V)


def self_attention__loops(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    out = np.zeros(Z.shape[:-1] + (V.shape[-1],))
    for b in np.ndindex(*Z.shape[:-2]):
        for i in range(Z.shape[-2]):
            scores = np.array([Q[b + (i,)] @ K[b + (j,)] for j in range(Z.shape[-2])])
            scores = scores / math.sqrt(Q.shape[-1])
            e = np.exp(scores - scores.max())
            out[b + (i,)] = (e / e.sum()) @ V[b]
    return out


def self_attention__scipy(Z, W_q, W_k, W_v):
    from scipy.special import softmax as scipy_softmax

    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    return scipy_softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1) @ V


def self_attention__list_of_lists(Z, W_q, W_k, W_v):
    Z = np.asarray(Z)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(W_k.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True) @ V).tolist()


# =====================================================================
# step 8: multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads)
# =====================================================================
def multi_head_attention__head_loop(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        scores = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ V[..., cols])
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__reshape(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    *lead, n, d_model = Z.shape
    d_h = d_model // n_heads

    Q = np.swapaxes((Z @ W_q).reshape(*lead, n, n_heads, d_h), -2, -3)
    K = np.swapaxes((Z @ W_k).reshape(*lead, n, n_heads, d_h), -2, -3)
    V = np.swapaxes((Z @ W_v).reshape(*lead, n, n_heads, d_h), -2, -3)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    heads = e / e.sum(axis=-1, keepdims=True) @ V
    return np.swapaxes(heads, -2, -3).reshape(*lead, n, d_model) @ W_o


def multi_head_attention__einsum(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    split = Z.shape[:-1] + (n_heads, d_h)
    Q = np.einsum("...nd,de->...ne", Z, W_q).reshape(split)
    K = np.einsum("...nd,de->...ne", Z, W_k).reshape(split)
    V = np.einsum("...nd,de->...ne", Z, W_v).reshape(split)
    scores = np.einsum("...qhd,...khd->...hqk", Q, K) / math.sqrt(d_h)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    heads = np.einsum("...hqk,...khd->...qhd", e / e.sum(axis=-1, keepdims=True), V)
    return heads.reshape(Z.shape) @ W_o


def multi_head_attention__loops(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    concat = np.zeros(Z.shape)
    for b in np.ndindex(*Z.shape[:-2]):
        for h in range(n_heads):
            lo, hi = h * d_h, (h + 1) * d_h
            for i in range(Z.shape[-2]):
                scores = [float(Q[b + (i,)][lo:hi] @ K[b + (j,)][lo:hi]) / math.sqrt(d_h)
                          for j in range(Z.shape[-2])]
                m = max(scores)
                exps = [math.exp(s - m) for s in scores]
                total = sum(exps)
                for j, e in enumerate(exps):
                    concat[b + (i, slice(lo, hi))] += (e / total) * V[b + (j,)][lo:hi]
    return concat @ W_o


def multi_head_attention__scipy(Z, W_q, W_k, W_v, W_o, n_heads):
    from scipy.special import softmax as scipy_softmax

    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = [scipy_softmax(Q[..., h * d_h:(h + 1) * d_h]
                           @ np.swapaxes(K[..., h * d_h:(h + 1) * d_h], -1, -2) / np.sqrt(d_h),
                           axis=-1) @ V[..., h * d_h:(h + 1) * d_h]
             for h in range(n_heads)]
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__list_of_lists(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q, k, v = (A[..., h * d_h:(h + 1) * d_h] for A in (Q, K, V))
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append(e / e.sum(axis=-1, keepdims=True) @ v)
    return (np.concatenate(heads, axis=-1) @ W_o).tolist()


# =====================================================================
# registry
# =====================================================================
_HAVE_SCIPY = importlib.util.find_spec("scipy") is not None

_VARIANTS: dict[str, tuple[Callable[..., object], ...]] = {
    "step1": (dot_scores__einsum, dot_scores__loops, dot_scores__tensordot,
              dot_scores__broadcast_sum, dot_scores__list_of_lists),
    "step2": (scale_scores__np_sqrt, scale_scores__math_sqrt, scale_scores__power,
              scale_scores__loops, scale_scores__list_of_lists),
    "step3": (softmax__max_shift, softmax__logsumexp, softmax__moveaxis_loops,
              softmax__apply_along_axis, softmax__scipy, softmax__scipy_logsumexp,
              softmax__list_of_lists),
    "step4": (weighted_sum__matmul, weighted_sum__einsum, weighted_sum__loops,
              weighted_sum__tensordot, weighted_sum__broadcast_sum, weighted_sum__list_of_lists),
    "step5": (attention__vectorised, attention__einsum, attention__loops, attention__logsumexp,
              attention__scipy, attention__list_of_lists),
    "step6": (masked_attention__where_inf, masked_attention__big_negative,
              masked_attention__additive, masked_attention__einsum, masked_attention__loops,
              masked_attention__scipy, masked_attention__list_of_lists),
    "step7": (self_attention__vectorised, self_attention__einsum, self_attention__tensordot,
              self_attention__loops, self_attention__scipy, self_attention__list_of_lists),
    "step8": (multi_head_attention__head_loop, multi_head_attention__reshape,
              multi_head_attention__einsum, multi_head_attention__loops,
              multi_head_attention__scipy, multi_head_attention__list_of_lists),
}


def _name(fn: Callable[..., object]) -> str:
    return fn.__name__.split("__", 1)[1]


def _needs_scipy(fn: Callable[..., object]) -> bool:
    return "scipy" in _name(fn)


def variants_for(step_id: str) -> list[tuple[str, Callable[..., object]]]:
    """(name, function) for every correct variant of `step_id` runnable here.

    Variants that import SciPy are left out when SciPy is not installed.
    """
    return [(_name(fn), fn) for fn in _VARIANTS.get(step_id, ())
            if _HAVE_SCIPY or not _needs_scipy(fn)]


def variant_source(name: str, step_id: str) -> str:
    """The variant `name` of `step_id` as a complete learner file."""
    for fn in _VARIANTS.get(step_id, ()):
        if _name(fn) == name:
            return learner_source(fn, step_id)
    raise KeyError(f"no variant {name!r} for {step_id}")


__all__ = ["variant_source", "variants_for"]
