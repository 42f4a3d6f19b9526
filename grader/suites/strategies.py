"""Hypothesis strategies for the hidden suites, named after what they make.

Sizes are capped (`MAX_*`) so a whole step checks in well under a second;
the mistakes we look for show on small arrays, and Hypothesis shrinks a
failure to the smallest one anyway.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

MAX_SIDE = 4  # n_q, n_k, d_k, d_v
MAX_BATCH_DIMS = 2
MAX_BATCH_SIDE = 2
MAX_HEADS = 3
ELEMENT_BOUND = 10.0
DTYPES = (np.float64, np.float32)


def elements(dtype: Any, bound: float = ELEMENT_BOUND) -> st.SearchStrategy[float]:
    width = 32 if np.dtype(dtype) == np.float32 else 64
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=width)


def batch_shapes(min_dims: int = 0, max_dims: int = MAX_BATCH_DIMS) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=MAX_BATCH_SIDE) \
        if min_dims > 0 else st.one_of(st.just(()), hnp.array_shapes(min_dims=1, max_dims=max_dims,
                                                                          min_side=1, max_side=MAX_BATCH_SIDE))


def sides() -> st.SearchStrategy[int]:
    return st.integers(1, MAX_SIDE)


def dtypes() -> st.SearchStrategy[Any]:
    return st.sampled_from(DTYPES)


#: How `arrays` fills an array; Hypothesis shrinks towards the first (small integers),
#: which makes a failing example easy to read and to retype.
STYLES = ("small-ints", "normal", "uniform", "wide-ints", "mixed-scale", "extremes")


def _composite(f: Callable[..., Any]) -> Callable[..., st.SearchStrategy[Any]]:
    """`st.composite`, applied on first use.

    Hypothesis reads and tokenizes a composite's source when it is made
    (a few milliseconds each); a `check` of one step uses one or two of them.
    """
    made: Callable[..., st.SearchStrategy[Any]] | None = None

    @functools.wraps(f)
    def strategy(*args: Any, **kwargs: Any) -> st.SearchStrategy[Any]:
        nonlocal made
        if made is None:
            made = st.composite(f)
        return made(*args, **kwargs)

    return strategy


_STYLE = st.sampled_from(STYLES)
_SEED = st.integers(0, 2**32 - 1)


@_composite
def arrays(draw: Any, shape: tuple[int, ...], dtype: Any = np.float64,
           bound: float = ELEMENT_BOUND) -> np.ndarray:
    """Float arrays of `shape`, values within +-bound.

    Hypothesis draws a fill style and a seed rather than every element: two
    choices per array instead of hundreds keeps each example cheap (a whole
    step checks in a fraction of a second), and shrinking still goes to the
    simplest style and seed. Module-level strategies avoid rebuilding
    strategy objects on every draw, which costs more than the draw itself.
    """
    return _materialize(tuple(shape), np.dtype(dtype), draw(_STYLE), draw(_SEED), float(bound))


def _materialize(shape: tuple[int, ...], dtype: np.dtype, style: str, seed: int, bound: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = min(bound, 3.0)
    if style == "small-ints":
        a = rng.integers(-int(small), int(small) + 1, size=shape).astype(np.float64)
    elif style == "normal":
        a = rng.normal(0.0, min(bound / 3, 2.0), size=shape)
    elif style == "uniform":
        a = rng.uniform(-bound, bound, size=shape)
    elif style == "wide-ints":
        a = rng.integers(-int(min(bound, 1e6)), int(min(bound, 1e6)) + 1, size=shape).astype(np.float64)
    elif style == "mixed-scale":
        a = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 1 + int(np.log10(max(bound, 1.0))), size=shape)
    else:  # extremes: values at and near the bound, with zeros
        a = rng.choice(np.array([-bound, -bound / 2, 0.0, bound / 2, bound]), size=shape)
    a = np.clip(a, -bound, bound)
    with np.errstate(over="ignore"):
        return a.astype(dtype)


@_composite
def qk_arrays(draw: Any, batched: bool | None = None, dtype: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) with shapes (..., n_q, d_k), (..., n_k, d_k)."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    n_q, n_k, d_k = draw(sides()), draw(sides()), draw(sides())
    return draw(arrays(batch + (n_q, d_k), dt)), draw(arrays(batch + (n_k, d_k), dt))


@_composite
def qkv_arrays(draw: Any, batched: bool | None = None, dtype: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, K, V) with shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    n_q, n_k, d_k, d_v = draw(sides()), draw(sides()), draw(sides()), draw(sides())
    return (draw(arrays(batch + (n_q, d_k), dt)), draw(arrays(batch + (n_k, d_k), dt)),
            draw(arrays(batch + (n_k, d_v), dt)))


@_composite
def score_matrices(draw: Any, batched: bool | None = None, dtype: Any = None,
                   bound: float = 1e3) -> np.ndarray:
    """Score arrays (..., n_q, n_k)."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    return draw(arrays(batch + (draw(sides()), draw(sides())), dt, bound))


@_composite
def softmax_inputs(draw: Any, *, huge: bool = False, neg_inf: bool = False, dtype: Any = None,
                   min_dims: int = 1, max_dims: int = 3) -> tuple[np.ndarray, int]:
    """(x, axis) for softmax: any rank, any valid axis (negative ones too)."""
    dt = dtype or draw(dtypes())
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=4))
    bound = (1e300 if np.dtype(dt) == np.float64 else 1e38) if huge else 30.0
    x = draw(arrays(shape, dt, bound))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if neg_inf:
        holes = draw(hnp.arrays(np.bool_, shape))
        # Keep at least one finite entry in every slice along `axis`.
        first = [slice(None)] * len(shape)
        first[axis] = 0
        holes[tuple(first)] = False
        x = np.where(holes, -np.inf, x).astype(dt)
    return x, axis


@_composite
def weights_and_values(draw: Any, batched: bool | None = None, dtype: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(weights, V): rows of weights are non-negative and sum to 1."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    n_q, n_k, d_v = draw(sides()), draw(sides()), draw(sides())
    raw = draw(hnp.arrays(np.float64, batch + (n_q, n_k), elements=st.floats(0.01, 1.0)))
    w = (raw / raw.sum(axis=-1, keepdims=True)).astype(dt)
    return w, draw(arrays(batch + (n_k, d_v), dt))


def causal_masks(n_q: int, n_k: int) -> st.SearchStrategy[np.ndarray]:
    """Lower-triangular masks (query i sees keys <= i), widened so every row has a True."""
    offset = max(0, n_k - n_q)
    return st.just(np.tril(np.ones((n_q, n_k), dtype=bool), k=offset))


@_composite
def random_masks(draw: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Boolean masks with at least one True in every row."""
    mask = draw(hnp.arrays(np.bool_, shape))
    n_k = shape[-1]
    pick = draw(hnp.arrays(np.int64, shape[:-1], elements=st.integers(0, n_k - 1)))
    np.put_along_axis(mask, pick[..., None], True, axis=-1)
    return mask


@_composite
def masked_inputs(draw: Any, batched: bool | None = None, dtype: Any = None,
                  batched_mask: bool | None = None, causal: bool | None = None) -> tuple[np.ndarray, ...]:
    """(Q, K, V, mask) with a mask of shape (n_q, n_k) or (..., n_q, n_k)."""
    Q, K, V = draw(qkv_arrays(batched=batched, dtype=dtype))
    n_q, n_k = Q.shape[-2], K.shape[-2]
    use_causal = draw(st.booleans()) if causal is None else causal
    per_batch = (draw(st.booleans()) if batched_mask is None else batched_mask) and Q.ndim > 2
    shape = (Q.shape[:-2] if per_batch else ()) + (n_q, n_k)
    if use_causal:
        mask = np.broadcast_to(draw(causal_masks(n_q, n_k)), shape).copy()
    else:
        mask = draw(random_masks(shape))
    return Q, K, V, mask


@_composite
def projection_inputs(draw: Any, batched: bool | None = None, dtype: Any = None) -> tuple[np.ndarray, ...]:
    """(Z, W_q, W_k, W_v) for self-attention, with d_k != d_v allowed."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    n, d_model, d_k, d_v = draw(sides()), draw(sides()), draw(sides()), draw(sides())
    Z = draw(arrays(batch + (n, d_model), dt, 3.0))
    return (Z, draw(arrays((d_model, d_k), dt, 1.0)), draw(arrays((d_model, d_k), dt, 1.0)),
            draw(arrays((d_model, d_v), dt, 1.0)))


@_composite
def multi_head_inputs(draw: Any, batched: bool | None = None, dtype: Any = None) -> tuple[Any, ...]:
    """(Z, W_q, W_k, W_v, W_o, n_heads) with n_heads dividing d_model."""
    batch = draw(_batch(batched))
    dt = dtype or draw(dtypes())
    n_heads = draw(st.integers(1, MAX_HEADS))
    d_h = draw(st.integers(1, 3))
    d_model = n_heads * d_h
    n = draw(sides())
    Z = draw(arrays(batch + (n, d_model), dt, 3.0))
    Ws = [draw(arrays((d_model, d_model), dt, 1.0)) for _ in range(4)]
    return (Z, *Ws, n_heads)


def _batch(batched: bool | None) -> st.SearchStrategy[tuple[int, ...]]:
    if batched is None:
        return batch_shapes()
    if batched:
        return batch_shapes(min_dims=1)
    return st.just(())


# The lesson's worked example, used by every core step.
WORKED_Q = np.array([[1.0, 0.0, 1.0, 0.0]])
WORKED_K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
WORKED_V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])


# --- steps 2-5 -----------------------------------------------------------
MAX_D_K = 1024


def d_k_values(min_value: int = 1) -> st.SearchStrategy[int]:
    """Key widths for scale_scores: positive ints up to 1024 (most not perfect squares)."""
    return st.integers(min_value, MAX_D_K)


@_composite
def scale_inputs(draw: Any, batched: bool | None = None, dtype: Any = None,
                 min_d_k: int = 2) -> tuple[np.ndarray, int]:
    """(scores, d_k) for scale_scores: scores (..., n_q, n_k), d_k a positive int.

    d_k defaults to at least 2: with d_k = 1 dividing, multiplying and not
    scaling at all agree, so a test drawing it would prove little.
    """
    return draw(score_matrices(batched=batched, dtype=dtype)), draw(d_k_values(min_d_k))
