"""Readings: each catalogued mistake as a change to one part of the computation.

A step's computation is written once here as a pipeline of slots (the score
product, the scale, the mask, the softmax, the weighted sum, the projections,
the head split, the output projection). The correct computation uses every
slot's "ok" variant; a *reading* of a mistake id replaces one slot's variant
(a few ids touch two slots). Readings compose: `K.T` in the score slot with
division by d_k in the scale slot is the attention a learner with both
mistakes wrote, so two ids can be tested together without a hand-written
file for every pair. The same slot shows at every later step that contains
it, which gives each id its reading at every step where its code can occur.

Variants whose name starts with "ok" are other correct spellings (a -1e9 fill
instead of -inf, heads stacked on an axis instead of sliced); they combine
with anything and lose to a real mistake in the same slot.

Code written for matrices is modelled as it runs on a batch: a softmax that
reshapes its max to (rows, 1), loops over x[i] or unpacks a shape (`FORMS`),
d_k read as K.shape[1]. Those readings belong to `fixed-rank` (or, in step 3,
to `ignores-axis` with `fixed-rank` implied, see `IMPLIED`), so the id of
what else the code does wrong can be named beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: One configuration: slot name -> variant name (a missing slot is "ok").
Config = Mapping[str, Any]


def _swap(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


# ------------------------------------------------------------------ slots
def scores(v: str, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    if v == "ok":
        return Q @ _swap(K)
    if v == "kt":
        return Q @ K.T
    if v == "kt-dot":
        return np.dot(Q, K.T)
    if v == "swapped":
        return K @ _swap(Q)
    if v == "swapped-t":
        return K @ Q.T
    if v == "dot":
        return np.dot(Q, _swap(K))
    if v == "elementwise":
        return Q * K
    if v == "elementwise-sum":
        return np.sum(Q * K, axis=-1)
    if v == "elementwise-t":
        return Q * K.T
    raise KeyError(v)


def factor(v: str, d_k: int, dims: Mapping[str, int]) -> float:
    """The number the scores are multiplied by."""
    table = {
        "ok": 1 / math.sqrt(d_k),
        "one": 1.0,
        "dk": 1 / d_k,
        "mul": math.sqrt(d_k),
        "dv": 1 / math.sqrt(dims.get("d_v", d_k)),
        "dmodel": 1 / math.sqrt(dims.get("d_model", d_k)),
        "nk": 1 / math.sqrt(dims.get("n_k", d_k)),
        "nq": 1 / math.sqrt(dims.get("n_q", d_k)),
        "c8": 1 / 8.0,
        "root4": d_k ** -0.25,
        "dk2": d_k ** -2.0,
        "heads": 1 / math.sqrt(dims.get("n_heads", 1)),
        # K.shape[1] / Q.shape[1] for d_k: right on a matrix, a batch axis or a length otherwise
        "k1": 1 / math.sqrt(dims.get("k1", d_k)),
        "q1": 1 / math.sqrt(dims.get("q1", d_k)),
        "isqrt": 1 / max(1, math.isqrt(d_k)),
    }
    if isinstance(v, tuple) and v[0] == "fit":  # a factor c * d_k**p measured by the scale probe
        return float(v[1]) * float(d_k) ** float(v[2])
    return table[v]


#: Mask variants that build a causal mask of their own (they apply with no `mask` too).
CAUSAL = ("causal", "causal-square", "causal-and")


def _causal(v: str, s: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """GPT-style code: a lower-triangular mask built from the scores' shape (or (n_q, n_q),
    which only lines up when n_q == n_k), alone or together with `mask`."""
    n_q, n_k = s.shape[-2:]
    tri = np.tril(np.ones((n_q, n_q if v == "causal-square" else n_k), dtype=bool))
    if v == "causal-and" and mask is not None:
        tri = tri & mask
    return np.where(tri, s, -np.inf)


def premask(v: str, s: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    if v in CAUSAL:
        return _causal(v, s, mask)
    if mask is None or v == "ignored":
        return s
    if v == "ok":
        return np.where(mask, s, -np.inf)
    if v == "ok-1e9":
        return np.where(mask, s, -1e9)
    if v == "inverted":
        return np.where(mask, -np.inf, s)
    if v == "inverted-1e9":
        return np.where(mask, -1e9, s)
    if v == "inverted-add":  # an additive mask built the wrong way round: s + mask * -1e9
        return s - 1e9 * mask
    if v == "multiplied":
        return s * mask
    if v == "after":
        return s
    raise KeyError(v)


def _rows_reshape(x: np.ndarray, width: str) -> np.ndarray:
    """CS224n-style: max and sum over axis 1, reshaped to a column (2-D code run on any input)."""
    col = (-1, 1) if width == "any" else (x.shape[0], 1)
    x = x - np.max(x, axis=1).reshape(col)
    e = np.exp(x)
    return e / np.sum(e, axis=1).reshape(col)


def _slice_loop(x: np.ndarray) -> np.ndarray:
    """`for i in range(len(x)): out[i] = softmax(x[i])` written for rows: x[i] normalised whole."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def _form(v: str, x: np.ndarray) -> np.ndarray | None:
    """The output of a softmax written for matrices (`FORMS`), or None: compute it as usual.

    Each form is the code itself, run on whatever it is given: right on a
    matrix, an error or a wrong answer on other ranks, as the learner's would be.
    """
    if v == "rows2d":  # a shape unpacked into two names: only a matrix runs
        if x.ndim != 2:
            raise ValueError("matrix-only softmax")
        return None
    if v == "rows2d-vec":  # a matrix branch and a vector branch, nothing else
        if x.ndim > 2:
            raise ValueError("matrix-only softmax")
        return _normalise("ok", x, -1) if x.ndim == 1 else None
    if v in ("reshape", "reshape0"):
        return _rows_reshape(x, "any" if v == "reshape" else "rows")
    if v == "loop":
        return _slice_loop(x)
    return None


#: Softmax forms written for 2-D input: right on a matrix, wrong or an error otherwise.
FORMS = ("rows2d", "rows2d-vec", "reshape", "reshape0", "loop")


def _normalise(v: str, x: np.ndarray, ax: int) -> np.ndarray:
    """exp(x - max) / sum along `ax` as each catalogued normalisation mistake computes it."""
    if v == "ok":
        e = np.exp(x - np.max(x, axis=ax, keepdims=True))
        return e / np.sum(e, axis=ax, keepdims=True)
    if v == "nokeep":
        e = np.exp(x - np.max(x, axis=ax, keepdims=True))
        return e / np.sum(e, axis=ax)
    if v == "nokeep-max":
        e = np.exp(x - np.max(x, axis=ax))
        return e / np.sum(e, axis=ax)
    if v == "nokeep-raw":  # not shift-invariant: an unstable one differs on small input too
        e = np.exp(x)
        return e / np.sum(e, axis=ax)
    if v == "exp":
        return np.exp(x)
    if v == "exp-shift":
        return np.exp(x - np.max(x, axis=ax, keepdims=True))
    if v == "exp-global":
        return np.exp(x - np.max(x))
    if v == "global":
        e = np.exp(x - np.max(x))
        return e / np.sum(e)
    if v == "global-unshifted":
        e = np.exp(x)
        return e / np.sum(e)
    if v == "sum-global":  # each slice shifted by its own max, divided by the sum of everything
        e = np.exp(x - np.max(x, axis=ax, keepdims=True))
        return e / np.sum(e)
    if v == "no-exp":
        return x / np.sum(x, axis=ax, keepdims=True)
    if v == "no-exp-shift":
        y = x - np.max(x, axis=ax, keepdims=True)
        return y / np.sum(y, axis=ax, keepdims=True)
    if v in ("max-last", "sum-last", "max-first", "sum-first"):
        other = -1 if v.endswith("last") else 0
        m_ax, s_ax = (other, ax) if v.startswith("max") else (ax, other)
        e = np.exp(x - np.max(x, axis=m_ax, keepdims=True))  # one axis on a vector: right
        return e / np.sum(e, axis=s_ax, keepdims=True)
    raise KeyError(v)


def softmax_last(v: str, s: np.ndarray) -> np.ndarray:
    """The weights over the last axis (the keys), as each variant computes them."""
    if v in FORMS:
        out = _form(v, s)
        return _normalise("ok", s, -1) if out is None else out
    if v in ("axis-2", "axis0", "axis1"):
        return _normalise("ok", s, {"axis-2": -2, "axis0": 0, "axis1": 1}[v])
    if v in ("max-axis1", "max-axis-2", "sum-axis1", "sum-axis-2"):
        ax = 1 if v.endswith("axis1") else -2
        m_ax, s_ax = (ax, -1) if v.startswith("max") else (-1, ax)
        e = np.exp(s - np.max(s, axis=m_ax, keepdims=True))  # axis 1 of a matrix: right
        return e / np.sum(e, axis=s_ax, keepdims=True)
    return _normalise(v, s, -1)


def wsum(v: str, w: np.ndarray, V: np.ndarray) -> np.ndarray:
    if v == "ok":
        return w @ V
    if v == "transposed":
        return _swap(w) @ V
    if v == "transposed-t":
        return w.T @ V
    if v == "transposed-dot":
        return np.dot(w.T, V)
    if v == "elementwise":
        return w * V
    if v == "kt":
        return (V.T @ w.T).T
    if v == "kt-dot":
        return np.dot(V.T, w.T).T
    if v == "dot":
        return np.dot(w, V)
    raise KeyError(v)


def softmax(cfg: Config, x: np.ndarray, axis: int) -> np.ndarray:
    """Step 3: softmax(x, axis) with the configured axis, normalisation and form."""
    form = cfg.get("form", "ok")
    if form != "ok":
        out = _form(form, x)
        if out is not None:
            return out
    ax = {"ok": axis, "axis0": 0, "axis-2": -2, "last": -1, "one": 1}[cfg.get("axis", "ok")]
    return _normalise(cfg.get("norm", "ok"), x, ax)


# --------------------------------------------------------------- pipelines
def attend(cfg: Config, Q: np.ndarray, K: np.ndarray, V: np.ndarray, d_k: int,
           dims: Mapping[str, int], mask: np.ndarray | None = None) -> np.ndarray:
    """softmax(scale * Q K^T [masked]) V with every slot as configured."""
    s = scores(cfg.get("scores", "ok"), Q, K)
    local = {**dims, "n_q": Q.shape[-2], "n_k": K.shape[-2], "d_v": V.shape[-1],
             "k1": K.shape[1], "q1": Q.shape[1]}
    s = s * factor(cfg.get("scale", "ok"), d_k, local)
    mv = cfg.get("mask", "ok")
    if mask is not None or mv in CAUSAL:
        s = premask(mv, s, mask)
    w = softmax_last(cfg.get("softmax", "ok"), s)
    if mask is not None and mv == "after":
        w = w * mask
    return wsum(cfg.get("wsum", "ok"), w, V)


def _heads(cfg: Config, Q: np.ndarray, K: np.ndarray, V: np.ndarray, n_heads: int,
           dims: Mapping[str, int]) -> np.ndarray:
    v = cfg.get("heads", "ok")
    d_model = Q.shape[-1]
    d_h = d_model // n_heads
    lead = Q.shape[:-1]
    if v == "not-split":
        return attend(cfg, Q, K, V, d_model, dims)
    if v == "not-split-dh":
        return attend(cfg, Q, K, V, d_h, dims)
    if v in ("ok", "concat-rows", "stack-last"):
        outs = [attend(cfg, Q[..., h * d_h:(h + 1) * d_h], K[..., h * d_h:(h + 1) * d_h],
                       V[..., h * d_h:(h + 1) * d_h], d_h, dims) for h in range(n_heads)]
        if v == "ok":
            return np.concatenate(outs, axis=-1)
        if v == "concat-rows":
            return np.concatenate(outs, axis=-2).reshape(lead[:-1] + (lead[-1], d_model))
        return np.stack(outs, axis=-1).reshape(lead[:-1] + (lead[-1], d_model))
    n = Q.shape[-2]
    if v == "no-transpose":
        def split(X: np.ndarray) -> np.ndarray:
            return X.reshape(X.shape[:-2] + (n_heads, n, d_h))

        out = attend(cfg, split(Q), split(K), split(V), d_h, dims)
        return out.reshape(out.shape[:-3] + (n, d_model))

    def split_t(X: np.ndarray) -> np.ndarray:
        return np.swapaxes(X.reshape(X.shape[:-1] + (n_heads, d_h)), -2, -3)

    out = attend(cfg, split_t(Q), split_t(K), split_t(V), d_h, dims)
    if v == "ok-stacked":
        return np.swapaxes(out, -2, -3).reshape(out.shape[:-3] + (n, d_model))
    if v == "no-transpose-out":
        return out.reshape(out.shape[:-3] + (n, d_model))
    raise KeyError(v)


def compute(step: str, cfg: Config, args: tuple[Any, ...]) -> np.ndarray:
    """The output of `step` on `args` with the mistakes `cfg` describes."""
    a = [np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
         else x for x in args]
    if step == "step1":
        return scores(cfg.get("scores", "ok"), a[0], a[1])
    if step == "step2":
        s, d_k = a[0], int(a[1])
        return s * factor(cfg.get("scale", "ok"), d_k, {"n_k": s.shape[-1] if s.ndim else 1})
    if step == "step3":
        return softmax(cfg, a[0], int(a[1]) if len(a) > 1 else -1)
    if step == "step4":
        return wsum(cfg.get("wsum", "ok"), a[0], a[1])
    if step == "step5":
        Q, K, V = a
        return attend(cfg, Q, K, V, Q.shape[-1], {})
    if step == "step6":
        Q, K, V, mask = a
        return attend(cfg, Q, K, V, Q.shape[-1], {}, np.asarray(mask, dtype=bool))
    Z = a[0]
    W = a[1:4]
    p = cfg.get("proj", (0, 1, 2))
    Q, K, V = (np.dot(Z, W[i]) for i in p)
    dims = {"d_model": Z.shape[-1]}
    if step == "step7":
        return attend(cfg, Q, K, V, Q.shape[-1], dims)
    n_heads = int(a[5])
    out = _heads(cfg, Q, K, V, n_heads, {**dims, "n_heads": n_heads})
    return out if cfg.get("out", "ok") == "none" else out @ a[4]


# ------------------------------------------------------------ id readings
_SCALE = {
    "no-scale": ("one",),
    "scale-by-dk": ("dk",),
    "multiplied-by-sqrt": ("mul",),
}
_SOFTMAX = {
    # axis=1 written for 2-D scores: right there, the queries axis for a batch
    "softmax-wrong-axis": ("axis-2", "axis0", "axis1", "nokeep", "nokeep-max", "nokeep-raw"),
    "softmax-not-normalised": ("exp", "exp-shift", "exp-global"),
    "softmax-global": ("global",),
    "softmax-no-exp": ("no-exp", "no-exp-shift"),
    "softmax-axes-differ": ("max-axis1", "max-axis-2", "sum-axis1", "sum-axis-2"),
    "softmax-sum-global": ("sum-global",),
    # a softmax written for matrices: a shape unpacked, reshape(-1, 1), a loop over rows
    "fixed-rank": FORMS,
}


def _slot(slot: str, variants: tuple[Any, ...]) -> tuple[dict[str, Any], ...]:
    return tuple({slot: v} for v in variants)


def _attention_readings(step: str) -> dict[str, tuple[dict[str, Any], ...]]:
    r: dict[str, tuple[dict[str, Any], ...]] = {}
    r["transpose-all-axes"] = _slot("scores", ("kt", "kt-dot"))
    r["scores-transposed"] = _slot("scores", ("swapped",))
    r["dot-not-batched"] = ({"scores": "dot", "wsum": "dot"}, {"scores": "dot"}, {"wsum": "dot"})
    for mid, vs in _SCALE.items():
        r[mid] = _slot("scale", vs)
    if step in ("step5", "step6", "step7"):
        r["scale-by-dv"] = _slot("scale", ("dv",))
    wrong = {"step5": ("nk", "nq", "c8", "root4", "dk2", "isqrt"),
             "step6": ("nk", "nq", "c8", "root4", "dk2", "isqrt"),
             "step7": ("dmodel", "nk", "c8", "root4", "isqrt"), "step8": ("heads", "c8", "nk", "isqrt")}[step]
    r["wrong-scale"] = _slot("scale", wrong)
    for mid, vs in _SOFTMAX.items():
        r[mid] = _slot("softmax", vs)
    if step in ("step5", "step6", "step7"):
        r["fixed-rank"] += _slot("scale", ("k1", "q1"))
    r["weights-transposed"] = _slot("wsum", ("transposed", "transposed-t"))
    r["elementwise-product"] = ({"scores": "elementwise"}, {"wsum": "elementwise"})
    if step == "step6":
        # with a -1e9 fill, a softmax along the wrong axis gives no NaN for fully blocked columns
        r["softmax-wrong-axis"] = r["softmax-wrong-axis"] + tuple(
            {"softmax": v, "mask": "ok-1e9"} for v in ("axis-2", "axis0", "axis1"))
        r["softmax-axes-differ"] = r["softmax-axes-differ"] + tuple(
            {"softmax": v, "mask": "ok-1e9"} for v in ("max-axis1", "max-axis-2", "sum-axis1", "sum-axis-2"))
        r["mask-inverted"] = _slot("mask", ("inverted", "inverted-1e9", "inverted-add"))
        r["mask-not-renormalised"] = _slot("mask", ("after",))
        r["mask-multiplied"] = _slot("mask", ("multiplied",))
        r["causal-mask-hardcoded"] = _slot("mask", CAUSAL)
        r["mask-ignored"] = _slot("mask", ("ignored",))

    if step in ("step7", "step8"):
        perms = [(i, j, k) for i in range(3) for j in range(3) for k in range(3)]
        r["projections-swapped"] = _slot("proj", tuple(p for p in perms if p != (0, 1, 2)))
    if step == "step8":
        r["transpose-all-axes"] += ({"heads": "ok-stacked", "scores": "kt"},)
        r["scale-by-dmodel"] = _slot("scale", ("dmodel",))
        r["no-output-projection"] = _slot("out", ("none",))
        r["heads-not-split"] = _slot("heads", ("not-split", "not-split-dh"))
        r["heads-no-transpose"] = _slot("heads", ("no-transpose",))
        r["heads-concat-wrong-axis"] = _slot("heads", ("concat-rows", "stack-last", "no-transpose-out"))
    return r


#: step -> id -> the configurations that id can mean there (each one alternative).
READINGS: dict[str, dict[str, tuple[dict[str, Any], ...]]] = {
    "step1": {
        "transpose-all-axes": _slot("scores", ("kt", "kt-dot")),
        "scores-transposed": _slot("scores", ("swapped", "swapped-t")),
        "elementwise-product": _slot("scores", ("elementwise", "elementwise-sum", "elementwise-t")),
        "dot-not-batched": _slot("scores", ("dot",)),
    },
    "step2": {
        **{mid: _slot("scale", vs) for mid, vs in _SCALE.items()},
        "wrong-scale": _slot("scale", ("nk", "c8", "root4", "dk2", "isqrt")),
    },
    "step3": {
        "softmax-wrong-axis": (*_slot("axis", ("axis0", "axis-2")),
                               *_slot("norm", ("nokeep", "nokeep-max", "nokeep-raw"))),
        # always the last axis, or always axis 1 (the last one of a matrix), or
        # a loop over x[i] (rows of a matrix; see IMPLIED)
        "ignores-axis": (*_slot("axis", ("last", "one")), *_slot("form", ("loop", "reshape", "reshape0"))),
        "softmax-not-normalised": _slot("norm", ("exp", "exp-shift", "exp-global")),
        "softmax-global": _slot("norm", ("global", "global-unshifted")),
        "softmax-no-exp": _slot("norm", ("no-exp", "no-exp-shift")),
        "softmax-axes-differ": _slot("norm", ("max-last", "sum-last", "max-first", "sum-first")),
        "softmax-sum-global": _slot("norm", ("sum-global",)),
        "fixed-rank": _slot("form", ("rows2d", "rows2d-vec")),
    },
    "step4": {
        "weights-transposed": _slot("wsum", ("transposed", "transposed-t", "transposed-dot")),
        "elementwise-product": _slot("wsum", ("elementwise",)),
        "transpose-all-axes": _slot("wsum", ("kt", "kt-dot")),
        "dot-not-batched": _slot("wsum", ("dot",)),
    },
    **{s: _attention_readings(s) for s in ("step5", "step6", "step7", "step8")},
}


#: step -> id -> readings searched only where a behavioural probe measured the property
#: (`behaviour.py`): a GPT block's causal mask, where the task asked for none (CONTRACT:
#: an id at any step where it shows). Searched always, they would double the search's cost
#: on every failing step for a mistake the causality probe sees directly.
MEASURED_ONLY: dict[str, dict[str, tuple[dict[str, Any], ...]]] = {
    step: {"causal-mask-hardcoded": _slot("mask", ("causal", "causal-square"))}
    for step in ("step5", "step7", "step8")
}


#: step -> (slot, variant) -> (the same code without that part, the id that part adds).
#: A reading can be two mistakes in one spelling: axis=1 hard-coded ignores `axis`
#: *and* normalises the wrong axis of a 3-D input called with the default; a loop
#: over x[i] ignores `axis` and only works on a matrix. The second id is named only
#: where the learner follows the reading and not its counterpart (see search.py).
IMPLIED: dict[str, dict[tuple[str, str], tuple[dict[str, str], str]]] = {
    "step3": {
        ("axis", "one"): ({"axis": "last"}, "softmax-wrong-axis"),
        ("form", "loop"): ({"form": "ok", "axis": "last"}, "fixed-rank"),
        ("form", "reshape"): ({"form": "ok", "axis": "one"}, "fixed-rank"),
        ("form", "reshape0"): ({"form": "ok", "axis": "one"}, "fixed-rank"),
    },
}


def merge(a: Config, b: Config) -> dict[str, Any] | None:
    """Both configurations at once, or None when they want one slot two ways."""
    out = dict(a)
    for slot, v in b.items():
        have = out.get(slot)
        if have is None or have == v or str(have).startswith("ok"):
            out[slot] = v
        elif not str(v).startswith("ok"):
            return None
    return out


def key(cfg: Config) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(cfg.items()))


__all__ = ["CAUSAL", "FORMS", "IMPLIED", "MEASURED_ONLY", "READINGS", "Config", "compute", "key", "merge"]
