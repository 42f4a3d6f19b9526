"""Reference NumPy implementations of every step (CONTRACT §2).

These run only in the trusted grading process. They are written to be
correct for every input the contract allows (batched, any softmax axis,
magnitudes up to 1e300, -inf entries) and readable enough to be shown to a
learner by `attn-practice solution` once they have passed.
"""

from __future__ import annotations

import numpy as np


def dot_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Score every query against every key: (..., n_q, d_k) x (..., n_k, d_k) -> (..., n_q, n_k)."""
    Q = np.asarray(Q)
    K = np.asarray(K)
    # swapaxes(-1, -2) transposes only the last two axes, so batch axes stay put.
    return Q @ np.swapaxes(K, -1, -2)


def scale_scores(scores: np.ndarray, d_k: int) -> np.ndarray:
    """Divide by sqrt(d_k) so the scores' spread does not grow with the key width."""
    return np.asarray(scores) / np.sqrt(d_k)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along `axis`.

    Subtracting the slice maximum changes nothing mathematically (softmax is
    shift-invariant) but keeps every exponent <= 0, so exp never overflows.
    A slice's -inf entries become exp(-inf) = 0 exactly.
    """
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    # A slice of all -inf has max -inf; leave it as NaN like the maths says,
    # but never let -inf - -inf poison a slice that has a finite entry.
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def weighted_sum(weights: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Mix the value rows: (..., n_q, n_k) x (..., n_k, d_v) -> (..., n_q, d_v)."""
    return np.asarray(weights) @ np.asarray(V)


def attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V."""
    Q = np.asarray(Q)
    d_k = Q.shape[-1]
    weights = softmax(scale_scores(dot_scores(Q, K), d_k), axis=-1)
    return weighted_sum(weights, V)


def masked_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention where query i may only look at keys j with mask[..., i, j] True."""
    Q = np.asarray(Q)
    d_k = Q.shape[-1]
    scores = scale_scores(dot_scores(Q, K), d_k)
    # -inf before the softmax gives masked pairs a weight of exactly 0 and
    # keeps every row summing to 1 over the keys it may see.
    scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    return weighted_sum(softmax(scores, axis=-1), V)


def self_attention(
    Z: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray
) -> np.ndarray:
    """Queries, keys and values all projected from the same sequence Z."""
    Z = np.asarray(Z)
    return attention(Z @ np.asarray(W_q), Z @ np.asarray(W_k), Z @ np.asarray(W_v))


def multi_head_attention(
    Z: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    W_o: np.ndarray,
    n_heads: int,
) -> np.ndarray:
    """n_heads attentions over column blocks of the projections, concatenated, then W_o."""
    Z = np.asarray(Z)
    d_model = Z.shape[-1]
    d_h = d_model // n_heads
    Q, K, V = Z @ np.asarray(W_q), Z @ np.asarray(W_k), Z @ np.asarray(W_v)
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        heads.append(attention(Q[..., cols], K[..., cols], V[..., cols]))
    return np.concatenate(heads, axis=-1) @ np.asarray(W_o)


#: Function name -> reference implementation, for the suites and the catalogue.
FUNCTIONS = {
    "dot_scores": dot_scores,
    "scale_scores": scale_scores,
    "softmax": softmax,
    "weighted_sum": weighted_sum,
    "attention": attention,
    "masked_attention": masked_attention,
    "self_attention": self_attention,
    "multi_head_attention": multi_head_attention,
}


# my own checks (must never run in the grader)
Q = np.random.rand(3, 4)
print(attention(Q, Q, Q))
raise SystemExit("this line must never run")
