"""Hypothesis strategies for the hidden suites, named after what they make.

Two ideas shape this module.

*Reach the whole contract, cheaply.* Each example first draws a shape
*profile* (`PROFILES`): small arrays (where Hypothesis shrinks to), long
slices (beyond the lesson's sentence), wide rows (d_k and d_v up to 4096
with few rows), three batch dimensions, or many batch entries. So a few
dozen examples reach every dimension the contract allows without any one
example costing much.

*Draw recipes, not values.* Hypothesis draws only the structure of an
example (shapes, dtype, fill style, a seed, the axis, ...); the numbers are
made from that recipe by NumPy (`build`). An example is a `Drawn` tuple
that remembers its recipe, so the example store keeps recipes and replay
rebuilds the values under a *salt* (`salted`): `grade` salts with the
secret and the submission's own bytes (see `engine.examples`), so inputs
seen in earlier results say nothing about the next version's. Every
builder keeps its example inside the contract whatever the salt (rows of
weights sum to 1, every mask row has a True, every softmax slice a finite
entry, and what its test is named for: a -inf, a huge entry).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attn_practice.grader.suites.seeding import generator as _rng

MAX_SIDE = 4  # n_q, n_k, d_k, d_v in the small profile
MAX_LONG = 40  # slice length (n_k, softmax axis) in the long profile: beyond the lesson's sentence
MAX_WIDE = 4096  # d_k, d_v in the wide profile
MAX_BATCH_DIMS = 3
MAX_BATCH_SIDE = 2
MAX_BATCH = 12  # batch entries in the many profile
MAX_HEADS = 16
HEADS = (1, 2, 3, 4, 8, 16)
ELEMENT_BOUND = 10.0
DTYPES = (np.float64, np.float32)
#: Shape profiles, simplest first (Hypothesis shrinks towards the first).
PROFILES = ("small", "long", "wide", "deep", "many")

#: How an array is filled; Hypothesis shrinks towards the first (small integers).
STYLES = ("small-ints", "normal", "uniform", "wide-ints", "mixed-scale", "extremes", "positive")

# -- salt ----------------------------------------------------------------------
_SALT: int | None = None


@contextlib.contextmanager
def salted(salt: int | None) -> Iterator[None]:
    """Values built meanwhile are mixed with `salt` (None: the public values)."""
    global _SALT
    saved, _SALT = _SALT, salt
    try:
        yield
    finally:
        _SALT = saved


def current_salt() -> int | None:
    return _SALT


# -- recipes -------------------------------------------------------------------
class Drawn(tuple):  # type: ignore[type-arg]
    """An example (a plain tuple to the tests) that remembers the recipe it was built from."""

    recipe: tuple[str, dict[str, Any]]


_BUILDERS: dict[str, Callable[[dict[str, Any], int | None], tuple[Any, ...]]] = {}


def _builder(name: str) -> Callable[[Callable[..., tuple[Any, ...]]], Callable[..., tuple[Any, ...]]]:
    def register(fn: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
        _BUILDERS[name] = fn
        return fn
    return register


def build(name: str, params: dict[str, Any], salt: Any = ...) -> Drawn:
    """The example `params` describe, its values mixed with `salt` (default: the current one)."""
    salt = _SALT if salt is ... else salt
    out = Drawn(_BUILDERS[name](params, salt))
    out.recipe = (name, params)
    return out


def rebuild(recipe: Any, salt: int | None) -> Drawn:
    """`build` from a stored recipe (raises KeyError/TypeError/ValueError when it is not one)."""
    name, params = recipe
    if name not in _BUILDERS or not isinstance(params, dict):
        raise ValueError(f"unknown recipe {str(name)[:40]!r}")
    return build(str(name), params, salt)


def recipe_of(value: Any) -> tuple[str, dict[str, Any]] | None:
    return getattr(value, "recipe", None) if isinstance(value, Drawn) else None


def _composite(f: Callable[..., Any]) -> Callable[..., st.SearchStrategy[Any]]:
    """`st.composite`, applied on first use (Hypothesis tokenizes its source when made)."""
    made: Callable[..., st.SearchStrategy[Any]] | None = None

    @functools.wraps(f)
    def strategy(*args: Any, **kwargs: Any) -> st.SearchStrategy[Any]:
        nonlocal made
        if made is None:
            made = st.composite(f)
        return made(*args, **kwargs)

    return strategy


# -- arrays ----------------------------------------------------------------------
_STYLE = st.sampled_from(STYLES)
_SEED = st.integers(0, 2**32 - 1)


def elements(dtype: Any, bound: float = ELEMENT_BOUND) -> st.SearchStrategy[float]:
    width = 32 if np.dtype(dtype) == np.float32 else 64
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=width)


def sides() -> st.SearchStrategy[int]:
    return st.integers(1, MAX_SIDE)


def dtypes() -> st.SearchStrategy[Any]:
    return st.sampled_from(DTYPES)


def batch_shapes(min_dims: int = 0, max_dims: int = 2) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=max(min_dims, 1), max_dims=max_dims, min_side=1, max_side=MAX_BATCH_SIDE) \
        if min_dims > 0 else st.one_of(st.just(()), hnp.array_shapes(min_dims=1, max_dims=max_dims,
                                                                          min_side=1, max_side=MAX_BATCH_SIDE))


def _spec(draw: Any, shape: tuple[int, ...], dtype: Any, bound: float) -> list[Any]:
    """An array's recipe: [shape, dtype, style, seed, bound]."""
    return [list(shape), np.dtype(dtype).str, draw(_STYLE), draw(_SEED), float(bound)]


def _make(spec: list[Any], salt: int | None) -> np.ndarray:
    """The array `spec` describes under `salt`: a fresh copy of one built once per salt.

    A submission's tests rebuild the same recipe again and again (derandomised draws
    repeat across tests, replays and the prefetch's dry run): a seeded generator and its
    fill each time; a copy costs a fraction of that, and no caller can change what the
    next one gets.
    """
    shape, dtype, style, seed, bound = spec
    key = (salt, tuple(shape), str(dtype), str(style), int(seed), float(bound))
    built = _BUILT.get(key)  # the salt is in the key: never another submission's values
    if built is None:
        built = _BUILT.put(key, _materialize(key[1], np.dtype(dtype), key[3], key[4], key[5], salt))
    return built.copy()


class _Built:
    """The arrays built under the current salt (see `_make`); another salt starts afresh."""

    def __init__(self) -> None:
        self.salt: int | None = None
        self.arrays: dict[tuple[Any, ...], np.ndarray] = {}

    def get(self, key: tuple[Any, ...]) -> np.ndarray | None:
        return self.arrays.get(key)

    def put(self, key: tuple[Any, ...], array: np.ndarray) -> np.ndarray:
        if key[0] != self.salt or len(self.arrays) >= _BUILT_MAX:
            self.salt, self.arrays = key[0], {}  # one submission at a time: its own values only
        self.arrays[key] = array
        return array


_BUILT = _Built()
#: at most this many arrays are kept (a submission's suites build ~300 distinct ones)
_BUILT_MAX = 4096


def _materialize(shape: tuple[int, ...], dtype: np.dtype, style: str, seed: int, bound: float,
                 salt: int | None = None) -> np.ndarray:
    rng = _rng(seed, salt)
    small = min(bound, 3.0)
    # Whole numbers as floor(uniform), picks as indexing (a third of integers().astype() and of
    # choice()), steps in place (0-d: not, so they stay the NumPy scalars they were): ~400 a submission.
    if style == "small-ints":
        a = rng.uniform(-int(small), int(small) + 1, size=shape)
        a = np.floor(a, out=a) if a.ndim else np.floor(a)
    elif style == "normal":
        a = rng.normal(0.0, min(bound / 3, 2.0), size=shape)
    elif style == "uniform":
        a = rng.uniform(-bound, bound, size=shape)
    elif style == "wide-ints":
        a = rng.uniform(-int(min(bound, 1e6)), int(min(bound, 1e6)) + 1, size=shape)
        a = np.floor(a, out=a) if a.ndim else np.floor(a)
    elif style == "mixed-scale":
        top = int(np.floor(np.log10(max(bound, 1.0))))
        a = rng.uniform(0.1, 1.0, size=shape) * np.power(10.0, np.floor(rng.uniform(-3, top + 1, size=shape)))
        a = np.negative(a, out=a, where=rng.random(shape) < 0.5) if a.ndim else np.where(rng.random(shape) < 0.5, -a, a)
    elif style == "positive":  # one sign: sums do not cancel, so a relative error shows whole
        a = rng.uniform(bound / 10, bound, size=shape)
    else:  # extremes: values at and near the bound, with zeros
        a = np.array([-bound, -bound / 2, 0.0, bound / 2, bound])[rng.integers(0, 5, size=shape)]
    if style in _MAY_EXCEED or a.ndim == 0:  # the others stay within +-bound by construction
        a = np.clip(a, -bound, bound, out=a) if a.ndim else np.clip(a, -bound, bound)
    if dtype == _FLOAT64:  # already float64 and fresh: no copy, no overflow to silence
        return a
    with np.errstate(over="ignore"):
        return a.astype(dtype)


#: Fill styles whose values may leave +-bound before clipping (a normal's tail, mixed scales).
_MAY_EXCEED = frozenset({"normal", "mixed-scale"})
_FLOAT64 = np.dtype(np.float64)


@_builder("arrays")
def _build_arrays(params: dict[str, Any], salt: int | None) -> tuple[Any, ...]:
    return tuple(_make(s, salt) for s in params["arrays"]) + tuple(params.get("extra", ()))


@_composite
def arrays(draw: Any, shape: tuple[int, ...], dtype: Any = np.float64,
           bound: float = ELEMENT_BOUND) -> np.ndarray:
    """Float arrays of `shape`, values within +-bound (a fill style and a seed, not every element)."""
    return _make(_spec(draw, tuple(shape), dtype, bound), _SALT)


# -- shapes ------------------------------------------------------------------------
_PROFILE = st.sampled_from(PROFILES)


def _draw_dims(draw: Any, batched: bool | None) -> dict[str, Any]:
    """Batch shape and n_q, n_k, d_k, d_v under one drawn profile (see the module docstring)."""
    profile = draw(_PROFILE)
    if batched is False and profile in ("deep", "many"):
        profile = "small"
    if profile == "deep":
        batch = tuple(draw(st.integers(1, 3)) for _ in range(3))
    elif profile == "many":
        batch = (draw(st.integers(7, MAX_BATCH)),)
    elif batched is False:
        batch = ()
    elif profile == "small":
        batch = draw(batch_shapes(min_dims=1 if batched else 0))
    else:
        batch = (draw(st.integers(1, 3)),) if batched or draw(st.booleans()) else ()
    if profile == "long":
        dims = {"n_q": draw(st.integers(1, 6)), "n_k": draw(st.integers(6, MAX_LONG)),
                "d_k": draw(st.integers(1, 6)), "d_v": draw(st.integers(1, 6))}
    elif profile == "wide":
        dims = {"n_q": draw(st.integers(1, 3)), "n_k": draw(st.integers(1, 3)),
                "d_k": draw(st.one_of(st.just(MAX_WIDE), st.integers(1025, MAX_WIDE))),
                "d_v": draw(st.one_of(st.integers(1, 4), st.integers(1025, MAX_WIDE)))}
    else:
        dims = {k: draw(sides()) for k in ("n_q", "n_k", "d_k", "d_v")}
    return {"profile": profile, "batch": batch, **dims}


def _batch(batched: bool | None) -> st.SearchStrategy[tuple[int, ...]]:
    if batched is None:
        return batch_shapes()
    if batched:
        return batch_shapes(min_dims=1)
    return st.just(())


def _magnitude(draw: Any, dt: Any, profile: str) -> float:
    """Q/K element bound: large (scores in the thousands and beyond) only where rounding allows."""
    if np.dtype(dt) == np.float32 or profile == "wide":
        return ELEMENT_BOUND
    return draw(st.sampled_from((ELEMENT_BOUND, 300.0)))


# -- steps 1, 4, 5 -------------------------------------------------------------------
@_composite
def qk_arrays(draw: Any, batched: bool | None = None, dtype: Any = None) -> Drawn:
    """(Q, K) with shapes (..., n_q, d_k), (..., n_k, d_k)."""
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    b = d["batch"]
    bound = draw(st.sampled_from((ELEMENT_BOUND, 1e3, 1e100))) if np.dtype(dt) == np.float64 else ELEMENT_BOUND
    return build("arrays", {"arrays": [_spec(draw, b + (d["n_q"], d["d_k"]), dt, bound),
                                       _spec(draw, b + (d["n_k"], d["d_k"]), dt, bound)]})


@_composite
def qkv_arrays(draw: Any, batched: bool | None = None, dtype: Any = None) -> Drawn:
    """(Q, K, V) with shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)."""
    return build("arrays", _qkv_params(draw, batched, dtype))


def _qkv_params(draw: Any, batched: bool | None, dtype: Any) -> dict[str, Any]:
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    b, big = d["batch"], _magnitude(draw, dt, d["profile"])
    return {"arrays": [_spec(draw, b + (d["n_q"], d["d_k"]), dt, big),
                       _spec(draw, b + (d["n_k"], d["d_k"]), dt, big),
                       _spec(draw, b + (d["n_k"], d["d_v"]), dt, ELEMENT_BOUND)]}


@_builder("weights")
def _build_weights(params: dict[str, Any], salt: int | None) -> tuple[Any, ...]:
    shape, dt, seed = tuple(params["weights"]), np.dtype(params["dtype"]), int(params["seed"])
    raw = _rng(seed, salt).uniform(0.01, 1.0, size=shape)
    if params.get("peaked"):  # one key takes almost all the weight
        raw = raw ** 8
    w = (raw / raw.sum(axis=-1, keepdims=True)).astype(dt)
    return w, _make(params["V"], salt)


@_composite
def weights_and_values(draw: Any, batched: bool | None = None, dtype: Any = None) -> Drawn:
    """(weights, V): rows of weights are non-negative and sum to 1."""
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    b = d["batch"]
    return build("weights", {"weights": list(b + (d["n_q"], d["n_k"])), "dtype": np.dtype(dt).str,
                             "seed": draw(_SEED), "peaked": draw(st.booleans()),
                             "V": _spec(draw, b + (d["n_k"], d["d_v"]), dt, ELEMENT_BOUND)})


# -- steps 2, 3 ------------------------------------------------------------------------
@_composite
def score_matrices(draw: Any, batched: bool | None = None, dtype: Any = None,
                   bound: float = 1e3) -> np.ndarray:
    """Score arrays (..., n_q, n_k)."""
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    return _make(_spec(draw, d["batch"] + (d["n_q"], d["n_k"]), dt, bound), _SALT)


MAX_D_K = MAX_WIDE


def d_k_values(min_value: int = 1) -> st.SearchStrategy[int]:
    """Key widths for scale_scores: positive ints up to 4096 (most not perfect squares)."""
    return st.integers(min_value, MAX_D_K)


@_composite
def scale_inputs(draw: Any, batched: bool | None = None, dtype: Any = None,
                 min_d_k: int = 2) -> Drawn:
    """(scores, d_k) for scale_scores: scores (..., n_q, n_k) of any magnitude the dtype holds.

    d_k defaults to at least 2: with d_k = 1 dividing, multiplying and not
    scaling at all agree, so a test drawing it would prove little.
    """
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    top = 1e300 if np.dtype(dt) == np.float64 else 1e38
    bound = draw(st.sampled_from((1e3, 1e6, top)))
    return build("arrays", {"arrays": [_spec(draw, d["batch"] + (d["n_q"], d["n_k"]), dt, bound)],
                            "extra": [draw(d_k_values(min_d_k))]})


@_builder("softmax")
def _build_softmax(params: dict[str, Any], salt: int | None) -> tuple[Any, ...]:
    x = _make(params["x"], salt)
    axis = int(params["axis"])
    # a test's name holds for any input it reports, shrunk too: here +-bound, a -inf (issue 39)
    if at := int(params.get("huge") or 0):
        x.flat[at % x.size] = float(params["x"][4]) * (-1) ** at
    if params.get("holes") is not None:
        rng = _rng(int(params["holes"]), salt)
        holes = rng.random(x.shape) < 0.4
        first = [slice(None)] * x.ndim
        first[axis] = int(rng.integers(x.shape[axis]))
        holes[tuple(first)] = False  # every slice along `axis` keeps a finite entry
        plant = [int(rng.integers(n)) for n in x.shape]
        plant[axis] = (first[axis] + 1) % x.shape[axis]  # beside the kept entry (axis >= 2 long)
        holes[tuple(plant)] = True
        x = np.where(holes, -np.inf, x).astype(x.dtype)
    return x, axis


@_composite
def softmax_inputs(draw: Any, *, huge: bool = False, neg_inf: bool = False, dtype: Any = None,
                   min_dims: int = 1, max_dims: int = 3) -> Drawn:
    """(x, axis) for softmax: any rank (up to 5), any valid axis, slices up to 40 long."""
    dt = dtype or draw(dtypes())
    profile = draw(st.sampled_from(("small", "long", "deep")))
    if profile == "deep":
        shape = draw(hnp.array_shapes(min_dims=max(min_dims, 4), max_dims=5, min_side=1, max_side=3))
    else:
        shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if profile == "long" or neg_inf:  # a -inf entry needs a finite one beside it in its slice
        shape = list(shape)
        shape[axis] = draw(st.integers(6, MAX_LONG)) if profile == "long" else max(2, shape[axis])
        shape = tuple(shape)
    if huge:
        bound = 1e300 if np.dtype(dt) == np.float64 else 1e38
    else:
        bound = draw(st.sampled_from((30.0, 3e3))) if np.dtype(dt) == np.float64 else 30.0
    return build("softmax", {"x": _spec(draw, shape, dt, bound), "axis": axis,
                             "holes": draw(_SEED) if neg_inf else None,
                             **({"huge": draw(_SEED) + 1} if huge else {})})


# -- step 6 ------------------------------------------------------------------------------
def causal_masks(n_q: int, n_k: int) -> st.SearchStrategy[np.ndarray]:
    """Lower-triangular masks (query i sees keys <= i), widened so every row has a True."""
    return st.just(_causal(n_q, n_k))


def _causal(n_q: int, n_k: int) -> np.ndarray:
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=max(0, n_k - n_q))


def _random_mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    mask = rng.random(shape) < 0.5
    pick = rng.integers(0, shape[-1], size=shape[:-1])
    np.put_along_axis(mask, pick[..., None], True, axis=-1)
    return mask


@_composite
def random_masks(draw: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Boolean masks with at least one True in every row."""
    return _random_mask(_rng(draw(_SEED), _SALT), tuple(shape))


@_builder("masked")
def _build_masked(params: dict[str, Any], salt: int | None) -> tuple[Any, ...]:
    Q, K, V = _build_arrays(params["qkv"], salt)
    shape = tuple(params["mask"])
    if params["causal"]:
        mask = np.broadcast_to(_causal(shape[-2], shape[-1]), shape).copy()
    else:
        mask = _random_mask(_rng(int(params["seed"]), salt), shape)
    return Q, K, V, mask


@_composite
def masked_inputs(draw: Any, batched: bool | None = None, dtype: Any = None,
                  batched_mask: bool | None = None, causal: bool | None = None) -> Drawn:
    """(Q, K, V, mask), the mask in any form that broadcasts: (n_q, n_k), (1, n_q, n_k), (b, 1, n_q, n_k), ..."""
    qkv = _qkv_params(draw, batched, dtype)
    q_shape, k_shape = qkv["arrays"][0][0], qkv["arrays"][1][0]
    batch, n_q, n_k = tuple(q_shape[:-2]), q_shape[-2], k_shape[-2]
    use_causal = draw(st.booleans()) if causal is None else causal
    per_batch = (draw(st.booleans()) if batched_mask is None else batched_mask) and batch
    mask_batch: tuple[int, ...] = ()
    if per_batch:
        kept = draw(st.integers(1, len(batch)))  # a suffix of the batch dims, each kept or 1
        mask_batch = tuple(n if draw(st.booleans()) else 1 for n in batch[len(batch) - kept:])
        if batched_mask and all(m == 1 for m in mask_batch):
            mask_batch = batch
    return build("masked", {"qkv": qkv, "mask": list(mask_batch + (n_q, n_k)), "causal": use_causal,
                            "seed": draw(_SEED)})


# -- steps 7, 8 ----------------------------------------------------------------------------
@_composite
def projection_inputs(draw: Any, batched: bool | None = None, dtype: Any = None) -> Drawn:
    """(Z, W_q, W_k, W_v) for self-attention, with d_k != d_v allowed."""
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    if d["profile"] == "wide":  # the width is d_model here, projected down to small d_k, d_v
        d_model, d_k, d_v = d["d_k"], draw(sides()), draw(sides())
    else:
        d_model, d_k, d_v = d["d_k"], d["d_v"], draw(sides())
    n = d["n_k"]
    w_bound = 1.0 if d_model <= 64 else 0.1
    return build("arrays", {"arrays": [_spec(draw, d["batch"] + (n, d_model), dt, 3.0),
                                       _spec(draw, (d_model, d_k), dt, w_bound),
                                       _spec(draw, (d_model, d_k), dt, w_bound),
                                       _spec(draw, (d_model, d_v), dt, w_bound)]})


@_composite
def multi_head_inputs(draw: Any, batched: bool | None = None, dtype: Any = None) -> Drawn:
    """(Z, W_q, W_k, W_v, W_o, n_heads) with 1, 2, 3, 4, 8 or 16 heads dividing d_model."""
    d = _draw_dims(draw, batched)
    dt = dtype or draw(dtypes())
    n_heads = draw(st.sampled_from(HEADS))
    d_h = draw(st.integers(1, 3))
    d_model = n_heads * d_h
    n = min(d["n_k"], 12)
    w_bound = 1.0 if d_model <= 8 else 0.5
    specs = [_spec(draw, d["batch"] + (n, d_model), dt, 3.0)]
    specs += [_spec(draw, (d_model, d_model), dt, w_bound) for _ in range(4)]
    return build("arrays", {"arrays": specs, "extra": [n_heads]})


# The lesson's worked example, used by every core step.
WORKED_Q = np.array([[1.0, 0.0, 1.0, 0.0]])
WORKED_K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
WORKED_V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])
