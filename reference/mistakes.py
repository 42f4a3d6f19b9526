"""The catalogue of known wrong versions, keyed by diagnosis id (CONTRACT §3).

Each `Mistake` carries the words a learner sees (title, explanation, nudge)
and, per step where it can show, one or more wrong implementations written
the way a learner would write them. A mistake met early shows again later
(a `K.T` inside step 5 is still `transpose-all-axes`), so later steps hold
composites: the full computation with that one mistake in it. `PAIRS` holds
implementations with two mistakes at once, whose ids must both be named.
(The diagnosis composes mistakes itself, from `grader/engine/diagnose/readings.py`;
these files are what `selftest` grades to check it.)

Every implementation below is a plain, self-contained module-level function:
it uses only `np` and `math`, calls no other function of this module, and
its source (`source_for`) is a complete learner file once the `def` line is
renamed to the step's function. `attn-practice selftest` sends those files
to a real sandbox; `grader/engine/diagnose/` runs the functions in-process.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from attn_practice.reference.mistakes_probed import (
    attention__causal_mask_hardcoded,
    masked_attention__causal_mask_and_mask,
    masked_attention__mask_ignored,
    masked_attention__pair__mask_ignored__transpose_all_axes,
    multi_head_attention__causal_mask_hardcoded,
    self_attention__causal_mask_hardcoded,
    self_attention__pair__causal_mask_hardcoded__no_scale,
)

#: Step id -> the function name a learner file must define (CONTRACT §1).
STEP_FUNCTIONS: Mapping[str, str] = MappingProxyType({
    "step1": "dot_scores",
    "step2": "scale_scores",
    "step3": "softmax",
    "step4": "weighted_sum",
    "step5": "attention",
    "step6": "masked_attention",
    "step7": "self_attention",
    "step8": "multi_head_attention",
})


@dataclass(frozen=True)
class Mistake:
    """One known mistake: what to tell the learner, and how it looks per step."""

    id: str
    title: str
    explanation: str
    nudge: str
    #: step id -> wrong implementations (the first is the representative one).
    impls: Mapping[str, tuple[Callable[..., object], ...]] = field(
        default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps where this mistake can be shown, in step order."""
        return tuple(sorted(self.impls))


# =====================================================================
# step 1: dot_scores(Q, K)
# =====================================================================
def dot_scores__transpose_all_axes(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    return Q @ K.T


def dot_scores__transpose_all_axes_dot(Q, K):
    return np.dot(np.asarray(Q), np.asarray(K).T)


def dot_scores__scores_transposed(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    return K @ np.swapaxes(Q, -1, -2)


def dot_scores__scores_transposed_t(Q, K):
    return np.asarray(K) @ np.asarray(Q).T


def dot_scores__elementwise_product(Q, K):
    return np.asarray(Q) * np.asarray(K)


def dot_scores__elementwise_product_sum(Q, K):
    return np.sum(np.asarray(Q) * np.asarray(K), axis=-1)


def dot_scores__elementwise_product_t(Q, K):
    return np.asarray(Q) * np.asarray(K).T


def dot_scores__fixed_rank(Q, K):
    Q = np.asarray(Q)
    K = np.asarray(K)
    n_q, d_k = Q.shape
    n_k, _ = K.shape
    out = np.zeros((n_q, n_k))
    for i in range(n_q):
        for j in range(n_k):
            out[i, j] = np.dot(Q[i], K[j])
    return out


def dot_scores__fixed_rank_3d(Q, K):
    return np.einsum("bqd,bkd->bqk", Q, K)


# =====================================================================
# step 2: scale_scores(scores, d_k)
# =====================================================================
def scale_scores__no_scale(scores, d_k):
    return np.array(scores, dtype=float)


def scale_scores__scale_by_dk(scores, d_k):
    return np.asarray(scores) / d_k


def scale_scores__multiplied_by_sqrt(scores, d_k):
    return np.asarray(scores) * np.sqrt(d_k)


def scale_scores__wrong_scale_nk(scores, d_k):
    scores = np.asarray(scores)
    return scores / np.sqrt(scores.shape[-1])


def scale_scores__wrong_scale_const(scores, d_k):
    return np.asarray(scores) / 8.0


def scale_scores__wrong_scale_fourth_root(scores, d_k):
    return np.asarray(scores) / d_k ** 0.25


def scale_scores__fixed_rank(scores, d_k):
    scores = np.asarray(scores)
    rows, cols = scores.shape
    out = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            out[i, j] = scores[i, j] / math.sqrt(d_k)
    return out


# =====================================================================
# step 3: softmax(x, axis=-1)
# =====================================================================
def softmax__wrong_axis(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def softmax__wrong_axis_second_last(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-2, keepdims=True))
    return e / np.sum(e, axis=-2, keepdims=True)


def softmax__not_normalised(x, axis=-1):
    return np.exp(np.asarray(x))


def softmax__not_normalised_shifted(x, axis=-1):
    x = np.asarray(x)
    return np.exp(x - np.max(x, axis=axis, keepdims=True))


def softmax__not_normalised_global_shift(x, axis=-1):
    x = np.asarray(x)
    return np.exp(x - np.max(x))


def softmax__global(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def softmax__global_unshifted(x, axis=-1):
    e = np.exp(np.asarray(x))
    return e / np.sum(e)


def softmax__unstable(x, axis=-1):
    e = np.exp(np.asarray(x))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax__ignores_axis(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax__no_keepdims(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)


def softmax__no_keepdims_max(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis)


def softmax__fixed_rank(x, axis=-1):
    x = np.asarray(x)
    n_rows, n_cols = x.shape
    out = np.zeros((n_rows, n_cols))
    if axis in (0, -2):
        for j in range(n_cols):
            e = np.exp(x[:, j] - np.max(x[:, j]))
            out[:, j] = e / np.sum(e)
    else:
        for i in range(n_rows):
            e = np.exp(x[i] - np.max(x[i]))
            out[i] = e / np.sum(e)
    return out


# =====================================================================
# step 4: weighted_sum(weights, V)
# =====================================================================
def weighted_sum__weights_transposed(weights, V):
    return np.swapaxes(np.asarray(weights), -1, -2) @ np.asarray(V)


def weighted_sum__weights_transposed_t(weights, V):
    return np.asarray(weights).T @ np.asarray(V)


def weighted_sum__weights_transposed_dot(weights, V):
    return np.dot(np.asarray(weights).T, np.asarray(V))


def weighted_sum__elementwise_product(weights, V):
    return np.asarray(weights) * np.asarray(V)


def weighted_sum__transpose_all_axes(weights, V):
    return (np.asarray(V).T @ np.asarray(weights).T).T


def weighted_sum__transpose_all_axes_dot(weights, V):
    return np.dot(np.asarray(V).T, np.asarray(weights).T).T


def weighted_sum__fixed_rank(weights, V):
    weights = np.asarray(weights)
    V = np.asarray(V)
    n_q, n_k = weights.shape
    out = np.zeros((n_q, V.shape[1]))
    for i in range(n_q):
        for j in range(n_k):
            out[i] += weights[i, j] * V[j]
    return out


def weighted_sum__fixed_rank_3d(weights, V):
    return np.einsum("bqk,bkd->bqd", weights, V)


# =====================================================================
# step 5: attention(Q, K, V)
# =====================================================================
def attention__transpose_all_axes(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__transpose_all_axes_dot(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = np.dot(Q, K.T) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__scores_transposed(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__no_scale(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__scale_by_dk(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__multiplied_by_sqrt(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__scale_by_dv(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def attention__wrong_scale_nk(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__wrong_scale_const(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / 8.0
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__wrong_scale_fourth_root(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.25
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_wrong_axis(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_wrong_axis_zero(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=0, keepdims=True))
    weights = e / np.sum(e, axis=0, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_unstable(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores)
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_not_normalised(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = np.exp(scores)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_not_normalised_shifted(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_not_normalised_global_shift(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return np.exp(scores - np.max(scores)) @ np.asarray(V, dtype=float)


def attention__softmax_global(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores))
    weights = e / np.sum(e)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_no_keepdims(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_no_keepdims_max(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1))
    weights = e / np.sum(e, axis=-1)
    return weights @ np.asarray(V, dtype=float)


def attention__weights_transposed(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return np.swapaxes(weights, -1, -2) @ np.asarray(V, dtype=float)


def attention__fixed_rank(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    scores = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[1])
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = e / np.sum(e, axis=1, keepdims=True)
    return np.einsum("qk,kv->qv", weights, V)


def attention__fixed_rank_3d(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    scores = np.einsum("bqd,bkd->bqk", Q, K) / np.sqrt(Q.shape[2])
    e = np.exp(scores - np.max(scores, axis=2, keepdims=True))
    weights = e / np.sum(e, axis=2, keepdims=True)
    return np.einsum("bqk,bkv->bqv", weights, V)


# =====================================================================
# step 6: masked_attention(Q, K, V, mask)
# =====================================================================
def masked_attention__mask_inverted(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), -np.inf, scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__mask_inverted_big_negative(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), -1e9, scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__mask_inverted_additive(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = scores + np.asarray(mask, dtype=float) * -1e9
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__mask_not_renormalised(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    weights = weights * np.asarray(mask, dtype=bool)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__transpose_all_axes(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__transpose_all_axes_dot(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = np.dot(Q, K.T) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__scores_transposed(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__no_scale(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2)
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__scale_by_dk(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__multiplied_by_sqrt(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__scale_by_dv(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def masked_attention__wrong_scale_nk(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__wrong_scale_const(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / 8.0
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_unstable(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores)
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_wrong_axis(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_wrong_axis_inf(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_not_normalised(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    weights = np.exp(scores)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__fixed_rank(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    scores = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[1])
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = e / np.sum(e, axis=1, keepdims=True)
    return np.einsum("qk,kv->qv", weights, V)


# =====================================================================
# step 7: self_attention(Z, W_q, W_k, W_v)
# =====================================================================
def self_attention__projections_swapped_qk(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = Z @ W_k
    K = Z @ W_q
    V = Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__projections_swapped_kv(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = Z @ W_q
    K = Z @ W_v
    V = Z @ W_k
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__projections_swapped_qv(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = Z @ W_v
    K = Z @ W_k
    V = Z @ W_q
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__projections_rotated(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = Z @ W_k
    K = Z @ W_v
    V = Z @ W_q
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__projections_rotated_back(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q = Z @ W_v
    K = Z @ W_q
    V = Z @ W_k
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__no_scale(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__scale_by_dk(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__multiplied_by_sqrt(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__scale_by_dv(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__wrong_scale_dmodel(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Z.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__wrong_scale_n(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Z.shape[-2])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__transpose_all_axes(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__transpose_all_axes_dot(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = np.dot(Z, W_q), np.dot(Z, W_k), np.dot(Z, W_v)
    scores = np.dot(Q, K.T) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__softmax_unstable(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores)
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def self_attention__softmax_wrong_axis(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ V


def self_attention__softmax_not_normalised(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return np.exp(scores) @ V


def self_attention__softmax_global(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores))
    return e / np.sum(e) @ V


def self_attention__softmax_no_keepdims(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1)
    return weights @ V


def self_attention__weights_transposed(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return np.swapaxes(weights, -1, -2) @ V


def self_attention__fixed_rank(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = np.einsum("id,jd->ij", Q, K) / np.sqrt(Q.shape[1])
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = e / np.sum(e, axis=1, keepdims=True)
    return weights @ V


# =====================================================================
# step 8: multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads)
# =====================================================================
def multi_head_attention__scale_by_dmodel(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__no_output_projection(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1)


def multi_head_attention__heads_not_split(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return (weights @ V) @ W_o


def multi_head_attention__heads_not_split_dh(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return (weights @ V) @ W_o


def multi_head_attention__no_scale(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__scale_by_dk(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / d_h
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__multiplied_by_sqrt(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) * np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__wrong_scale_heads(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(n_heads)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__wrong_scale_const(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / 8.0
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__projections_swapped(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_k, Z @ W_q, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__projections_swapped_kv(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_v, Z @ W_k
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__projections_swapped_qv(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_v, Z @ W_k, Z @ W_q
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__transpose_all_axes(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ k.T / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__transpose_all_axes_dot(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = np.dot(q, k.T) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__transpose_all_axes_stacked(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape[-2], Z.shape[-1]
    d_h = d_model // n_heads
    Q = np.swapaxes((Z @ W_q).reshape(Z.shape[:-1] + (n_heads, d_h)), -2, -3)
    K = np.swapaxes((Z @ W_k).reshape(Z.shape[:-1] + (n_heads, d_h)), -2, -3)
    V = np.swapaxes((Z @ W_v).reshape(Z.shape[:-1] + (n_heads, d_h)), -2, -3)
    scores = Q @ K.T / np.sqrt(d_h)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    heads = e / np.sum(e, axis=-1, keepdims=True) @ V
    return np.swapaxes(heads, -2, -3).reshape(Z.shape[:-2] + (n, d_model)) @ W_o


def multi_head_attention__softmax_unstable(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        e = np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__softmax_wrong_axis(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
        heads.append(e / np.sum(e, axis=-2, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__softmax_not_normalised(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        heads.append(np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__weights_transposed(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_h = Z.shape[-1] // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        weights = e / np.sum(e, axis=-1, keepdims=True)
        heads.append(np.swapaxes(weights, -1, -2) @ v)
    return np.concatenate(heads, axis=-1) @ W_o


def multi_head_attention__fixed_rank(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape
    d_h = d_model // n_heads
    Q = (Z @ W_q).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    K = (Z @ W_k).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    V = (Z @ W_v).reshape(n, n_heads, d_h).transpose(1, 0, 2)
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_h)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    heads = e / np.sum(e, axis=-1, keepdims=True) @ V
    return heads.transpose(1, 0, 2).reshape(n, d_model) @ W_o


# =====================================================================
# np.dot on batched input, scores multiplied by the mask, a hard-coded
# causal mask, heads joined or reshaped the wrong way (seen in real code)
# =====================================================================
def dot_scores__dot_not_batched(Q, K):
    return np.dot(np.asarray(Q), np.swapaxes(np.asarray(K), -1, -2))


def weighted_sum__dot_not_batched(weights, V):
    return np.dot(np.asarray(weights), np.asarray(V))


def attention__dot_not_batched(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return np.dot(weights, np.asarray(V, dtype=float))


def self_attention__dot_not_batched(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = np.dot(Z, W_q), np.dot(Z, W_k), np.dot(Z, W_v)
    scores = np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return np.dot(weights, V)


def masked_attention__mask_multiplied(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = scores * np.asarray(mask, dtype=float)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__causal_mask_hardcoded(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    causal = np.tril(np.ones((Q.shape[-2], K.shape[-2]), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def multi_head_attention__heads_concat_wrong_axis(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape[-2], Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    joined = np.concatenate(heads, axis=-2)
    return joined.reshape(Z.shape[:-2] + (n, d_model)) @ W_o


def multi_head_attention__heads_concat_stacked(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape[-2], Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_h)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.stack(heads, axis=-1).reshape(Z.shape[:-2] + (n, d_model)) @ W_o


def multi_head_attention__heads_no_transpose(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    n, d_model = Z.shape[-2], Z.shape[-1]
    d_h = d_model // n_heads
    shape = Z.shape[:-2] + (n_heads, n, d_h)
    Q = (Z @ W_q).reshape(shape)
    K = (Z @ W_k).reshape(shape)
    V = (Z @ W_v).reshape(shape)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    heads = e / np.sum(e, axis=-1, keepdims=True) @ V
    return heads.reshape(Z.shape[:-2] + (n, d_model)) @ W_o


# =====================================================================
# two mistakes at once (real code often has two; `selftest` checks both are named)
# =====================================================================
def softmax__pair__unstable__wrong_axis(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / np.sum(e, axis=0, keepdims=True)


def softmax__pair__unstable__ignores_axis(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / np.sum(e, axis=-1, keepdims=True)


def attention__pair__transpose_all_axes__scale_by_dk(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ K.T / Q.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__pair__transpose_all_axes__unstable(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    e = np.exp(Q @ K.T / np.sqrt(Q.shape[-1]))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__pair__no_scale__wrong_axis(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__pair__not_renormalised__scale_by_dk(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True) * np.asarray(mask, dtype=bool)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__pair__mask_inverted__no_scale(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = np.where(np.asarray(mask, dtype=bool), -1e9, Q @ np.swapaxes(K, -1, -2))
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def self_attention__pair__projections_swapped__no_scale(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_v, Z @ W_k
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def self_attention__pair__transpose_all_axes__scale_by_dk(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / K.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def multi_head_attention__pair__no_output_projection__scale_by_dmodel(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    heads = []
    for h in range(n_heads):
        q = Q[..., h * d_h:(h + 1) * d_h]
        k = K[..., h * d_h:(h + 1) * d_h]
        v = V[..., h * d_h:(h + 1) * d_h]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        heads.append(e / np.sum(e, axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1)


def multi_head_attention__pair__heads_not_split__unstable(Z, W_q, W_k, W_v, W_o, n_heads):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    e = np.exp(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return (e / np.sum(e, axis=-1, keepdims=True) @ V) @ W_o


# =====================================================================
# softmax slips seen in real code (issue 21): no exp, max and sum over
# different axes, a per-slice shift with a global sum
# =====================================================================
def softmax__no_exp(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return x / np.sum(x, axis=axis, keepdims=True)


def softmax__no_exp_shifted(x, axis=-1):
    x = np.asarray(x, dtype=float)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def softmax__axes_differ(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax__axes_differ_max_last(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax__sum_global(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e)


def attention__softmax_no_exp(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = scores / np.sum(scores, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_axes_differ(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def attention__softmax_sum_global(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_no_exp(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, 0.0)
    weights = scores / np.sum(scores, axis=-1, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_axes_differ(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-2, keepdims=True)
    return weights @ np.asarray(V, dtype=float)


def masked_attention__softmax_sum_global(Q, K, V, mask):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e)
    return weights @ np.asarray(V, dtype=float)


def self_attention__softmax_no_exp(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return scores / np.sum(scores, axis=-1, keepdims=True) @ V


def self_attention__softmax_axes_differ(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-2, keepdims=True) @ V


def self_attention__softmax_sum_global(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e) @ V


def softmax__pair__no_exp__ignores_axis(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return x / np.sum(x, axis=-1, keepdims=True)


def softmax__pair__sum_global__ignores_axis(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e)


def attention__pair__no_exp__transpose_all_axes(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    return scores / np.sum(scores, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def attention__pair__axes_differ__scale_by_dk(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ np.asarray(V, dtype=float)


def attention__pair__sum_global__no_scale(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    scores = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e) @ np.asarray(V, dtype=float)


def self_attention__pair__no_exp__projections_swapped(Z, W_q, W_k, W_v):
    Z = np.asarray(Z, dtype=float)
    Q, K, V = Z @ W_k, Z @ W_q, Z @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return scores / np.sum(scores, axis=-1, keepdims=True) @ V


# =====================================================================
# the catalogue
# =====================================================================
_ENTRIES = (
    Mistake(
        "transpose-all-axes",
        "K.T reverses every axis",
        "`.T` (like `np.transpose` with no axes) reverses *all* the axes. For a 2-D "
        "matrix that is the transpose you want, but with batch axes it also moves the "
        "batch axis to the end, so batched input fails or gets mixed up.",
        "You only want to swap the last two axes. Look for a NumPy function that swaps "
        "two named axes, and try your function on a 3-D input.",
        {
            "step1": (dot_scores__transpose_all_axes, dot_scores__transpose_all_axes_dot),
            "step4": (weighted_sum__transpose_all_axes, weighted_sum__transpose_all_axes_dot),
            "step5": (attention__transpose_all_axes, attention__transpose_all_axes_dot),
            "step6": (masked_attention__transpose_all_axes,
                      masked_attention__transpose_all_axes_dot),
            "step7": (self_attention__transpose_all_axes, self_attention__transpose_all_axes_dot),
            "step8": (multi_head_attention__transpose_all_axes,
                      multi_head_attention__transpose_all_axes_dot,
                      multi_head_attention__transpose_all_axes_stacked),
        },
    ),
    Mistake(
        "scores-transposed",
        "Scores come out transposed",
        "You computed K Q^T instead of Q K^T: row i holds key i against every query, so "
        "the result has shape (..., n_k, n_q) instead of (..., n_q, n_k).",
        "Entry [i, j] should be query i scored against key j. Which array's rows should "
        "index the rows of the result?",
        {
            "step1": (dot_scores__scores_transposed, dot_scores__scores_transposed_t),
            "step5": (attention__scores_transposed,),
            "step6": (masked_attention__scores_transposed,),
        },
    ),
    Mistake(
        "elementwise-product",
        "Elementwise product instead of a matrix product",
        "`*` multiplies matching entries one by one; it never sums over the shared "
        "dimension, so you get neither the right values nor the right shape.",
        "Each output entry is a sum of products over one shared axis. Which operator "
        "multiplies *and* sums like that?",
        {
            "step1": (dot_scores__elementwise_product, dot_scores__elementwise_product_sum,
                      dot_scores__elementwise_product_t),
            "step4": (weighted_sum__elementwise_product,),
        },
    ),
    Mistake(
        "no-scale",
        "Scores not scaled",
        "The scores were not divided by sqrt(d_k). Dot products of longer vectors have a "
        "bigger spread, which pushes the softmax towards one-hot weights.",
        "Follow the scores from the dot product to the softmax: what should happen to "
        "them in between?",
        {
            "step2": (scale_scores__no_scale,),
            "step5": (attention__no_scale,),
            "step6": (masked_attention__no_scale,),
            "step7": (self_attention__no_scale,),
            "step8": (multi_head_attention__no_scale,),
        },
    ),
    Mistake(
        "scale-by-dk",
        "Divided by d_k, not sqrt(d_k)",
        "Dividing by d_k shrinks the scores too much: a sum of d_k random products has a "
        "spread of about sqrt(d_k), so that is the number that brings it back to 1.",
        "Check the divisor: the formula divides by the square root of the key width.",
        {
            "step2": (scale_scores__scale_by_dk,),
            "step5": (attention__scale_by_dk,),
            "step6": (masked_attention__scale_by_dk,),
            "step7": (self_attention__scale_by_dk,),
            "step8": (multi_head_attention__scale_by_dk,),
        },
    ),
    Mistake(
        "multiplied-by-sqrt",
        "Multiplied by sqrt(d_k) instead of dividing",
        "The scores were multiplied by sqrt(d_k), which makes their spread larger "
        "instead of bringing it back to about 1.",
        "Look at the operator between the scores and sqrt(d_k).",
        {
            "step2": (scale_scores__multiplied_by_sqrt,),
            "step5": (attention__multiplied_by_sqrt,),
            "step6": (masked_attention__multiplied_by_sqrt,),
            "step7": (self_attention__multiplied_by_sqrt,),
            "step8": (multi_head_attention__multiplied_by_sqrt,),
        },
    ),
    Mistake(
        "scale-by-dv",
        "Scaled with d_v instead of d_k",
        "The scale came from the value width d_v (V's last axis). The scores are dot "
        "products of queries with keys, so their size depends on the key width d_k.",
        "Which array's last axis is d_k? Try an input where V is narrower than Q and K.",
        {
            "step5": (attention__scale_by_dv,),
            "step6": (masked_attention__scale_by_dv,),
            "step7": (self_attention__scale_by_dv,),
        },
    ),
    Mistake(
        "wrong-scale",
        "Divided by the wrong quantity",
        "The scores were divided by something other than sqrt(d_k): a sequence length, "
        "a fixed number, another array's width or another power of d_k.",
        "d_k is the width of the query and key vectors. Test with inputs where n_q, n_k, "
        "d_k and d_v are all different: which one does your code really use?",
        {
            "step2": (scale_scores__wrong_scale_nk, scale_scores__wrong_scale_const,
                      scale_scores__wrong_scale_fourth_root),
            "step5": (attention__wrong_scale_nk, attention__wrong_scale_const,
                      attention__wrong_scale_fourth_root),
            "step6": (masked_attention__wrong_scale_nk, masked_attention__wrong_scale_const),
            "step7": (self_attention__wrong_scale_dmodel, self_attention__wrong_scale_n),
            "step8": (multi_head_attention__wrong_scale_heads,
                      multi_head_attention__wrong_scale_const),
        },
    ),
    Mistake(
        "softmax-wrong-axis",
        "Softmax along the wrong axis",
        "The weights were normalised along a different axis from the one asked for (for "
        "attention: the keys axis, the last one), so the slices that should sum to 1 "
        "don't. A sum taken without keepdims=True does this too: NumPy lines it up "
        "with the wrong axis when it divides.",
        "Which axis do your max and sum run over, and what shape do they have? Check "
        "that the slices along the intended axis of your output sum to 1.",
        {
            "step3": (softmax__wrong_axis, softmax__wrong_axis_second_last,
                      softmax__no_keepdims, softmax__no_keepdims_max),
            "step5": (attention__softmax_wrong_axis, attention__softmax_wrong_axis_zero,
                      attention__softmax_no_keepdims, attention__softmax_no_keepdims_max),
            "step6": (masked_attention__softmax_wrong_axis,
                      masked_attention__softmax_wrong_axis_inf),
            "step7": (self_attention__softmax_wrong_axis, self_attention__softmax_no_keepdims),
            "step8": (multi_head_attention__softmax_wrong_axis,),
        },
    ),
    Mistake(
        "softmax-not-normalised",
        "exp without normalising",
        "exp(x) is only the numerator of the softmax: without dividing by the sum, the "
        "values don't sum to 1 and can be far larger than 1.",
        "After exponentiating, what makes each slice add up to 1?",
        {
            "step3": (softmax__not_normalised, softmax__not_normalised_shifted,
                      softmax__not_normalised_global_shift),
            "step5": (attention__softmax_not_normalised,
                      attention__softmax_not_normalised_shifted,
                      attention__softmax_not_normalised_global_shift),
            "step6": (masked_attention__softmax_not_normalised,),
            "step7": (self_attention__softmax_not_normalised,),
            "step8": (multi_head_attention__softmax_not_normalised,),
        },
    ),
    Mistake(
        "softmax-global",
        "Normalised over the whole array",
        "You divided by the sum over every entry, so the whole array sums to 1 instead "
        "of each slice you normalise (along `axis` in a softmax, over the keys in "
        "attention).",
        "Give your sum (and your max, if you take one) an axis, and keep that axis "
        "(keepdims=True) so the result broadcasts back.",
        {
            "step3": (softmax__global, softmax__global_unshifted),
            "step5": (attention__softmax_global,),
            "step7": (self_attention__softmax_global,),
        },
    ),
    Mistake(
        "softmax-unstable",
        "Overflow on large inputs",
        "exp of a large number overflows to inf, and inf / inf is NaN. Softmax does not "
        "change when you subtract the same number from every entry of a slice, and "
        "subtracting the slice's maximum keeps every exponent <= 0.",
        "Try your softmax on [1000.0, 1001.0]. What could you subtract from every entry "
        "without changing the answer?",
        {
            "step3": (softmax__unstable,),
            "step5": (attention__softmax_unstable,),
            "step6": (masked_attention__softmax_unstable,),
            "step7": (self_attention__softmax_unstable,),
            "step8": (multi_head_attention__softmax_unstable,),
        },
    ),
    Mistake(
        "ignores-axis",
        "Ignores the axis argument",
        "Your softmax does the same thing whatever `axis` says (for a matrix, it "
        "normalises the rows), so softmax(x, axis=0) gives the same result as softmax(x).",
        "Where is `axis` used inside your function? Every reduction should use it.",
        {"step3": (softmax__ignores_axis,)},
    ),
    Mistake(
        "weights-transposed",
        "Used weights^T with V",
        "Output row i should mix the value rows using query i's weights (row i of the "
        "weights); with the weights transposed it uses column i instead.",
        "Which axis of the weights indexes keys, and which axis of V? Match them up.",
        {
            "step4": (weighted_sum__weights_transposed, weighted_sum__weights_transposed_t,
                      weighted_sum__weights_transposed_dot),
            "step5": (attention__weights_transposed,),
            "step7": (self_attention__weights_transposed,),
            "step8": (multi_head_attention__weights_transposed,),
        },
    ),
    Mistake(
        "mask-inverted",
        "Mask inverted",
        "True in the mask means 'query i may attend to key j', but your code blocked "
        "exactly those pairs and let the blocked ones through.",
        "Check which scores end up as -inf: the ones where the mask is True, or False?",
        {"step6": (masked_attention__mask_inverted, masked_attention__mask_inverted_big_negative,
                   masked_attention__mask_inverted_additive)},
    ),
    Mistake(
        "mask-not-renormalised",
        "Masked after the softmax",
        "Zeroing weights after the softmax leaves each row summing to less than 1. "
        "Blocked pairs have to be removed before the softmax so the remaining weights "
        "share the whole 1.",
        "Check the row sums of your weights. Where could the mask go so that the softmax "
        "itself gives blocked pairs weight 0?",
        {"step6": (masked_attention__mask_not_renormalised,)},
    ),
    Mistake(
        "projections-swapped",
        "Projections swapped",
        "One of Q, K and V was computed with another one's weight matrix (for example "
        "Z @ W_k for the queries).",
        "Write down which weight matrix each of Q, K and V should use, and check each "
        "line against it.",
        {
            "step7": (self_attention__projections_swapped_qk, self_attention__projections_swapped_kv,
                      self_attention__projections_swapped_qv, self_attention__projections_rotated,
                      self_attention__projections_rotated_back),
            "step8": (multi_head_attention__projections_swapped,
                      multi_head_attention__projections_swapped_kv,
                      multi_head_attention__projections_swapped_qv),
        },
    ),
    Mistake(
        "scale-by-dmodel",
        "Scaled by sqrt(d_model), not sqrt(d_h)",
        "Each head works on only d_h = d_model // n_heads columns, so its scores are "
        "dot products of length d_h and should be divided by sqrt(d_h).",
        "Inside one head, how wide are the query and key vectors?",
        {"step8": (multi_head_attention__scale_by_dmodel,)},
    ),
    Mistake(
        "no-output-projection",
        "Forgot the output projection W_o",
        "After concatenating the heads, the result still has to be multiplied by the "
        "output projection W_o.",
        "Every weight matrix passed in should be used once. Which one isn't?",
        {"step8": (multi_head_attention__no_output_projection,)},
    ),
    Mistake(
        "heads-not-split",
        "Heads not split",
        "You ran one attention over all d_model columns instead of n_heads attentions "
        "over blocks of d_h columns; separate softmaxes per head are what make "
        "multi-head attention different.",
        "Head h should only see columns h*d_h to (h+1)*d_h of Q, K and V.",
        {"step8": (multi_head_attention__heads_not_split,
                   multi_head_attention__heads_not_split_dh)},
    ),
    Mistake(
        "fixed-rank",
        "Works for one number of dimensions only",
        "Your code gives right answers for one number of axes only: something in it "
        "assumes a fixed rank (a shape unpacked into two names, axes 0 and 1 by number, "
        "a hard-coded einsum, `.T`, or np.dot, which does not treat leading axes as a "
        "batch), so inputs with a different number of batch axes fail.",
        "Refer to axes from the end (-1, -2) and use operations that broadcast over "
        "leading axes, then try a 3-D input.",
        {
            "step1": (dot_scores__fixed_rank, dot_scores__fixed_rank_3d),
            "step2": (scale_scores__fixed_rank,),
            "step3": (softmax__fixed_rank,),
            "step4": (weighted_sum__fixed_rank, weighted_sum__fixed_rank_3d),
            "step5": (attention__fixed_rank, attention__fixed_rank_3d),
            "step6": (masked_attention__fixed_rank,),
            "step7": (self_attention__fixed_rank,),
            "step8": (multi_head_attention__fixed_rank,),
        },
    ),
    Mistake(
        "dot-not-batched",
        "np.dot on batched input",
        "np.dot (like np.inner) is a matrix product only for 2-D arrays. Given a batch, "
        "it pairs every "
        "batch entry with every other one, so batched input comes out with extra axes "
        "(or fails).",
        "Use `@` (np.matmul), which treats leading axes as a batch, and try your "
        "function on a 3-D input.",
        {
            "step1": (dot_scores__dot_not_batched,),
            "step4": (weighted_sum__dot_not_batched,),
            "step5": (attention__dot_not_batched,),
            "step7": (self_attention__dot_not_batched,),
        },
    ),
    Mistake(
        "mask-multiplied",
        "Scores multiplied by the mask",
        "Multiplying the scores by the mask turns blocked scores into 0, not into "
        "-inf: exp(0) = 1, so blocked keys still get weight.",
        "Which score gives weight exactly 0 after the softmax? Put that value where the "
        "mask is False (np.where) before the softmax.",
        {"step6": (masked_attention__mask_multiplied,)},
    ),
    Mistake(
        "causal-mask-hardcoded",
        "Causal mask hard-coded",
        "Your function builds its own causal (lower-triangular) mask, as a GPT block "
        "does: each query only sees the keys up to its own position. The task asked for "
        "no such mask here (in step 6, only for the `mask` argument), so every query "
        "should see every key that `mask` allows, later ones included.",
        "Remove the triangular mask you build (np.tril / np.triu). In step 6, use only the "
        "mask you are given: True where query i may attend to key j.",
        {"step5": (attention__causal_mask_hardcoded,),
         "step6": (masked_attention__causal_mask_hardcoded, masked_attention__causal_mask_and_mask),
         "step7": (self_attention__causal_mask_hardcoded,),
         "step8": (multi_head_attention__causal_mask_hardcoded,)},
    ),
    Mistake(
        "mask-ignored",
        "The mask is never used",
        "Your masked_attention gives the same answer whatever `mask` says: every query "
        "attends to every key, so the pairs the mask blocks still get weight.",
        "Before the softmax, put -inf in the scores where the mask is False "
        "(np.where(mask, scores, -np.inf)), so those pairs get weight exactly 0.",
        {"step6": (masked_attention__mask_ignored,)},
    ),
    Mistake(
        "heads-concat-wrong-axis",
        "Heads joined along the wrong axis",
        "The head outputs were joined along the wrong axis (stacked as extra rows, "
        "interleaved column by column, or reshaped from (..., n_heads, n, d_h) without "
        "moving the heads axis back) before becoming (..., n, d_model), so "
        "each position gets pieces of other positions or other heads.",
        "Head h's output belongs in columns h*d_h to (h+1)*d_h of each position's "
        "row: concatenate the heads in order along the last axis.",
        {"step8": (multi_head_attention__heads_concat_wrong_axis,
                   multi_head_attention__heads_concat_stacked)},
    ),
    Mistake(
        "heads-no-transpose",
        "Heads reshaped without the transpose",
        "Reshaping (..., n, d_model) straight to (..., n_heads, n, d_h) without "
        "swapping axes mixes positions and heads: a head then sees slices of several "
        "positions.",
        "Reshape to (..., n, n_heads, d_h) first, then swap the n and n_heads axes; "
        "undo both in reverse order after the attention.",
        {"step8": (multi_head_attention__heads_no_transpose,)},
    ),
    Mistake(
        "softmax-no-exp",
        "Normalised without exp",
        "Your softmax divides the scores themselves (or the scores minus their maximum) "
        "by their sum, without taking exp first. The weights then follow the scores in "
        "proportion instead of exponentially, and can be negative, or huge where a slice "
        "sums to about 0.",
        "Softmax is exp(x) / sum(exp(x)). Which of those two steps does your code do?",
        {
            "step3": (softmax__no_exp, softmax__no_exp_shifted),
            "step5": (attention__softmax_no_exp,),
            "step6": (masked_attention__softmax_no_exp,),
            "step7": (self_attention__softmax_no_exp,),
        },
    ),
    Mistake(
        "softmax-axes-differ",
        "Max and sum over different axes",
        "Your softmax takes the maximum along one axis and the sum along another. The "
        "shift by the maximum is only harmless when each slice is shifted by one number, "
        "its own maximum, and divided by its own sum: with two axes each weight is "
        "shifted by another slice's maximum, so the slices no longer sum to 1 or come out "
        "wrong.",
        "Give the max and the sum the same axis (the one you normalise along), both with "
        "keepdims=True.",
        {
            "step3": (softmax__axes_differ, softmax__axes_differ_max_last),
            "step5": (attention__softmax_axes_differ,),
            "step6": (masked_attention__softmax_axes_differ,),
            "step7": (self_attention__softmax_axes_differ,),
        },
    ),
    Mistake(
        "softmax-sum-global",
        "Shifted per slice, divided by the sum of everything",
        "Your softmax subtracts each slice's own maximum (right) but then divides by the "
        "sum over the whole array instead of each slice's sum, so no slice sums to 1 "
        "unless there is only one.",
        "The sum needs the same axis and keepdims=True as your max.",
        {
            "step3": (softmax__sum_global,),
            "step5": (attention__softmax_sum_global,),
            "step6": (masked_attention__softmax_sum_global,),
            "step7": (self_attention__softmax_sum_global,),
        },
    ),
)

#: Diagnosis id -> its catalogue entry.
MISTAKES: Mapping[str, Mistake] = MappingProxyType({m.id: m for m in _ENTRIES})


@dataclass(frozen=True)
class Pair:
    """Two catalogued mistakes in one implementation: both ids must be named."""

    step: str
    ids: tuple[str, str]
    impl: Callable[..., object] = field(compare=False, hash=False, repr=False)


PAIRS: tuple[Pair, ...] = (
    Pair("step3", ("softmax-unstable", "softmax-wrong-axis"), softmax__pair__unstable__wrong_axis),
    Pair("step3", ("softmax-unstable", "ignores-axis"), softmax__pair__unstable__ignores_axis),
    Pair("step5", ("transpose-all-axes", "scale-by-dk"),
         attention__pair__transpose_all_axes__scale_by_dk),
    Pair("step5", ("transpose-all-axes", "softmax-unstable"),
         attention__pair__transpose_all_axes__unstable),
    Pair("step5", ("no-scale", "softmax-wrong-axis"), attention__pair__no_scale__wrong_axis),
    Pair("step6", ("mask-not-renormalised", "scale-by-dk"),
         masked_attention__pair__not_renormalised__scale_by_dk),
    Pair("step6", ("mask-inverted", "no-scale"), masked_attention__pair__mask_inverted__no_scale),
    Pair("step7", ("projections-swapped", "no-scale"),
         self_attention__pair__projections_swapped__no_scale),
    Pair("step7", ("transpose-all-axes", "scale-by-dk"),
         self_attention__pair__transpose_all_axes__scale_by_dk),
    Pair("step8", ("no-output-projection", "scale-by-dmodel"),
         multi_head_attention__pair__no_output_projection__scale_by_dmodel),
    Pair("step8", ("heads-not-split", "softmax-unstable"),
         multi_head_attention__pair__heads_not_split__unstable),
    Pair("step3", ("softmax-no-exp", "ignores-axis"), softmax__pair__no_exp__ignores_axis),
    Pair("step3", ("softmax-sum-global", "ignores-axis"), softmax__pair__sum_global__ignores_axis),
    Pair("step5", ("transpose-all-axes", "softmax-no-exp"),
         attention__pair__no_exp__transpose_all_axes),
    Pair("step5", ("scale-by-dk", "softmax-axes-differ"), attention__pair__axes_differ__scale_by_dk),
    Pair("step5", ("no-scale", "softmax-sum-global"), attention__pair__sum_global__no_scale),
    Pair("step7", ("projections-swapped", "softmax-no-exp"),
         self_attention__pair__no_exp__projections_swapped),
    Pair("step6", ("transpose-all-axes", "mask-ignored"),
         masked_attention__pair__mask_ignored__transpose_all_axes),
    Pair("step7", ("no-scale", "causal-mask-hardcoded"),
         self_attention__pair__causal_mask_hardcoded__no_scale),
)


def pairs_for(step_id: str) -> list[Pair]:
    """The two-mistake implementations at `step_id`."""
    return [p for p in PAIRS if p.step == step_id]


def mistakes_for(step_id: str) -> list[tuple[Mistake, Callable[..., object]]]:
    """Every (mistake, wrong implementation) pair that can show at `step_id`."""
    return [(m, fn) for m in _ENTRIES for fn in m.impls.get(step_id, ())]


def learner_source(fn: Callable[..., object], step_id: str) -> str:
    """A complete learner file whose step function is `fn`, renamed for the step."""
    name = STEP_FUNCTIONS[step_id]
    body = inspect.getsource(fn)
    body = re.sub(rf"^def {re.escape(fn.__name__)}\(", f"def {name}(", body, count=1)
    return f"import numpy as np\nimport math\n\n\n{body}"


def source_for(mistake_id: str, step_id: str) -> str:
    """The representative wrong implementation of `mistake_id` at `step_id`, as a learner file."""
    impls = MISTAKES[mistake_id].impls.get(step_id)
    if not impls:
        raise KeyError(f"{mistake_id!r} has no implementation at {step_id}")
    return learner_source(impls[0], step_id)


__all__ = ["MISTAKES", "PAIRS", "STEP_FUNCTIONS", "Mistake", "Pair", "learner_source", "mistakes_for",
           "pairs_for", "source_for"]
