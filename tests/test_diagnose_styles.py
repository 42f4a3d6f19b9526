"""Diagnosis on code written the way people write it: two mistakes at once, odd styles.

Learner functions in-process (through the engine's `call` shape, see
`test_diagnose.as_call`), each with exactly the ids it must get, with and
without the suite-like failing inputs; correct code in unusual styles gets none.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_diagnose import _SUITE_INPUTS, failing_inputs, ids

scipy_special = pytest.importorskip("scipy.special")
ssm, logsumexp = scipy_special.softmax, scipy_special.logsumexp


def sm(s, axis=-1, stable=True):
    """Softmax along `axis`, with or without the max shift."""
    e = np.exp(s - s.max(axis=axis, keepdims=True)) if stable else np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)


def sw(a):
    return np.swapaxes(a, -1, -2)


def fr_loop_scores(Q, K, scale=1.0):
    n_q, n_k = Q.shape[0], K.shape[0]
    out = np.zeros((n_q, n_k))
    for i in range(n_q):
        for j in range(n_k):
            out[i, j] = Q[i] @ K[j] * scale
    return out


def heads(Z, Wq, Wk, Wv, Wo, h, scale=None, stable=True, wo=True, kt=False, proj=(0,1,2), split=True):
    W = (Wq, Wk, Wv)
    Q, K, V = (Z @ W[p] for p in proj)
    d = Z.shape[-1] // h
    if not split:
        s = Q @ (K.T if kt else sw(K)) / np.sqrt(scale or Q.shape[-1])
        out = sm(s, stable=stable) @ V
    else:
        outs = []
        for i in range(h):
            q, k, v = (X[..., i*d:(i+1)*d] for X in (Q, K, V))
            s = q @ (k.T if kt else sw(k)) / np.sqrt(scale or d)
            outs.append(sm(s, stable=stable) @ v)
        out = np.concatenate(outs, -1)
    return out @ Wo if wo else out


PAIR_CASES = [
  ("step1", {"fixed-rank", "scores-transposed"}, lambda Q, K: fr_loop_scores(K, Q)),
  ("step2", {"fixed-rank", "scale-by-dk"}, lambda s, d: np.array([[s[i, j] / d for j in range(s.shape[1])] for i in range(s.shape[0])])),
  ("step2", {"fixed-rank", "wrong-scale"}, lambda s, d: np.array([[s[i, j] / 8 for j in range(s.shape[1])] for i in range(s.shape[0])])),
  ("step3", {"softmax-not-normalised", "softmax-wrong-axis"}, lambda x, axis=-1: np.exp(x - x.max(axis=0, keepdims=True))),
  ("step3", {"fixed-rank", "ignores-axis", "softmax-unstable"}, lambda x, axis=-1: np.array([np.exp(r) / np.exp(r).sum() for r in x]) if x.ndim == 2 else (_ for _ in ()).throw(ValueError())),
  ("step3", {"softmax-global", "softmax-unstable"}, lambda x, axis=-1: np.exp(x) / np.exp(x).sum()),
  ("step5", {"scores-transposed", "softmax-unstable"}, lambda Q, K, V: sm(K @ sw(Q) / np.sqrt(Q.shape[-1]), stable=False) @ V),
  ("step5", {"weights-transposed", "no-scale"}, lambda Q, K, V: sw(sm(Q @ sw(K))) @ V),
  ("step5", {"scale-by-dv", "softmax-unstable"}, lambda Q, K, V: sm(Q @ sw(K) / np.sqrt(V.shape[-1]), stable=False) @ V),
  ("step5", {"wrong-scale", "weights-transposed"}, lambda Q, K, V: sw(sm(Q @ sw(K) / np.sqrt(K.shape[-2]))) @ V),
  ("step5", {"softmax-global", "no-scale"}, lambda Q, K, V: (np.exp(Q @ sw(K) - (Q @ sw(K)).max()) / np.exp(Q @ sw(K) - (Q @ sw(K)).max()).sum()) @ V),
  ("step5", {"softmax-not-normalised", "no-scale"}, lambda Q, K, V: np.exp(Q @ sw(K) - (Q @ sw(K)).max(-1, keepdims=True)) @ V),
  ("step5", {"dot-not-batched", "softmax-unstable"}, lambda Q, K, V: np.dot(sm(np.dot(Q, sw(K)) / np.sqrt(Q.shape[-1]), stable=False), V)),
  ("step5", {"fixed-rank", "softmax-unstable"}, lambda Q, K, V: sm(np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[1]), stable=False) @ V),
  ("step5", {"multiplied-by-sqrt", "transpose-all-axes"}, lambda Q, K, V: sm(Q @ K.T * np.sqrt(Q.shape[-1])) @ V),
  ("step5", {"scale-by-dk", "weights-transposed"}, lambda Q, K, V: sw(sm(Q @ sw(K) / Q.shape[-1])) @ V),
  ("step6", {"mask-inverted", "softmax-unstable"}, lambda Q, K, V, m: sm(np.where(m, -np.inf, Q @ sw(K) / np.sqrt(Q.shape[-1])), stable=False) @ V),
  ("step6", {"causal-mask-hardcoded", "scale-by-dk"}, lambda Q, K, V, m: sm(np.where(np.tril(np.ones((Q.shape[-2], K.shape[-2]), bool)), Q @ sw(K) / Q.shape[-1], -np.inf)) @ V),
  ("step6", {"mask-multiplied", "no-scale"}, lambda Q, K, V, m: sm((Q @ sw(K)) * m) @ V),
  ("step6", {"mask-not-renormalised", "softmax-wrong-axis"}, lambda Q, K, V, m: (sm(Q @ sw(K) / np.sqrt(Q.shape[-1]), axis=-2) * m) @ V),
  ("step6", {"mask-inverted", "scale-by-dk"}, lambda Q, K, V, m: sm(np.where(m, -1e9, Q @ sw(K) / Q.shape[-1])) @ V),
  ("step6", {"transpose-all-axes", "no-scale"}, lambda Q, K, V, m: sm(np.where(m, Q @ K.T, -np.inf)) @ V),
  ("step6", {"mask-not-renormalised", "no-scale"}, lambda Q, K, V, m: (sm(Q @ sw(K)) * m) @ V),
  ("step7", {"projections-swapped", "scale-by-dk"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wk) @ sw(Z @ Wq) / Wq.shape[1]) @ (Z @ Wv)),
  ("step7", {"projections-swapped", "transpose-all-axes"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ (Z @ Wv).T / np.sqrt(Wq.shape[1])) @ (Z @ Wk)),
  ("step7", {"wrong-scale", "projections-swapped"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ sw(Z @ Wv) / np.sqrt(Z.shape[-1])) @ (Z @ Wk)),
  ("step7", {"weights-transposed", "no-scale"}, lambda Z, Wq, Wk, Wv: sw(sm((Z @ Wq) @ sw(Z @ Wk))) @ (Z @ Wv)),
  ("step7", {"softmax-not-normalised", "projections-swapped", "softmax-unstable"}, lambda Z, Wq, Wk, Wv: np.exp((Z @ Wq) @ sw(Z @ Wq) / np.sqrt(Wq.shape[1])) @ (Z @ Wv)),
  ("step7", {"scale-by-dv", "softmax-unstable"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ sw(Z @ Wk) / np.sqrt(Wv.shape[1]), stable=False) @ (Z @ Wv)),
  ("step7", {"fixed-rank", "no-scale"}, lambda Z, Wq, Wk, Wv: sm(np.einsum("id,jd->ij", Z @ Wq, Z @ Wk)) @ (Z @ Wv)),
  ("step8", {"heads-not-split", "no-output-projection"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, split=False, wo=False)),
  ("step8", {"scale-by-dk", "no-output-projection"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, scale=(Z.shape[-1] // h) ** 2, wo=False)),
  ("step8", {"projections-swapped", "scale-by-dmodel"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, scale=Z.shape[-1], proj=(0, 2, 1))),
  ("step8", {"transpose-all-axes", "no-output-projection"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, kt=True, wo=False)),
  ("step8", {"no-scale", "softmax-unstable"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, scale=1, stable=False)),
  ("step8", {"heads-not-split", "no-scale"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, split=False, scale=1)),
  ("step8", {"no-output-projection", "softmax-unstable"}, lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, stable=False, wo=False)),
]

SINGLE_CASES = [
  ("step1", {"transpose-all-axes"}, lambda Q, K: Q @ np.transpose(K)),
  ("step1", {"transpose-all-axes"}, lambda Q, K: np.matmul(Q, K.transpose())),
  ("step1", {"fixed-rank"}, lambda Q, K: np.einsum("ij,kj->ik", Q, K)),
  ("step1", {"dot-not-batched"}, lambda Q, K: np.tensordot(Q, sw(K), axes=([-1], [-2])) if Q.ndim == 2 else np.dot(Q, sw(K))),
  ("step2", {"scale-by-dk"}, lambda s, d: np.divide(s, d)),
  ("step2", {"wrong-scale"}, lambda s, d: s / math.log(d + 1)),
  ("step2", {"multiplied-by-sqrt"}, lambda s, d: s * d ** 0.5),
  ("step3", {"softmax-global"}, lambda x, axis=-1: ssm(x)),
  ("step3", {"ignores-axis"}, lambda x, axis=-1: ssm(x, axis=-1)),
  ("step3", {"softmax-unstable"}, lambda x, axis=-1: np.exp(x) / np.sum(np.exp(x), axis=axis, keepdims=True)),
  ("step3", {"softmax-wrong-axis"}, lambda x, axis=-1: ssm(x, axis=0)),
  ("step4", {"weights-transposed"}, lambda w, V: np.einsum("...ji,...jd->...id", w, V)),
  ("step4", {"elementwise-product"}, lambda w, V: w * V),
  ("step5", {"no-scale"}, lambda Q, K, V: ssm(Q @ sw(K), axis=-1) @ V),
  ("step5", {"softmax-global"}, lambda Q, K, V: ssm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V),
  ("step5", {"transpose-all-axes"}, lambda Q, K, V: ssm(np.matmul(Q, np.transpose(K)) / math.sqrt(K.shape[-1]), axis=-1) @ V),
  ("step5", {"softmax-unstable"}, lambda Q, K, V: (lambda s: np.exp(s - logsumexp(s, axis=-1, keepdims=True) * 0) / np.exp(s).sum(-1, keepdims=True))(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V),
  ("step5", {"wrong-scale"}, lambda Q, K, V: sm(Q @ sw(K) / np.sqrt(Q.shape[-2])) @ V),
  ("step6", {"mask-inverted"}, lambda Q, K, V, m: sm(np.where(m == False, Q @ sw(K) / np.sqrt(Q.shape[-1]), -1e30)) @ V),  # noqa
  ("step6", {"mask-multiplied"}, lambda Q, K, V, m: sm(Q @ sw(K) / np.sqrt(Q.shape[-1]) * m.astype(float)) @ V),
  ("step6", {"mask-not-renormalised"}, lambda Q, K, V, m: np.where(m, sm(Q @ sw(K) / np.sqrt(Q.shape[-1])), 0) @ V),
  ("step6", {"causal-mask-hardcoded"}, lambda Q, K, V, m: sm(Q @ sw(K) / np.sqrt(Q.shape[-1]) + np.triu(np.full((Q.shape[-2], K.shape[-2]), -np.inf), 1)) @ V),
  ("step7", {"projections-swapped"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ sw(Z @ Wq) / np.sqrt(Wq.shape[1])) @ (Z @ Wv)),
  ("step7", {"softmax-wrong-axis"}, lambda Z, Wq, Wk, Wv: ssm((Z @ Wq) @ sw(Z @ Wk) / np.sqrt(Wk.shape[1]), axis=0) @ (Z @ Wv)),
  ("step7", {"scale-by-dv"}, lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ sw(Z @ Wk) / np.sqrt(Wv.shape[1])) @ (Z @ Wv)),
  ("step8", {"heads-not-split"}, lambda Z, Wq, Wk, Wv, Wo, h: sm((Z @ Wq) @ sw(Z @ Wk) / np.sqrt(Z.shape[-1])) @ (Z @ Wv) @ Wo),
]
CORRECT_CASES = [
  ("step1", lambda Q, K: np.einsum("...qd,...kd->...qk", Q, K)),
  ("step3", lambda x, axis=-1: np.exp(x - logsumexp(x, axis=axis, keepdims=True))),
  ("step3", lambda x, axis=-1: ssm(x, axis=axis)),
  ("step3", lambda x, axis=-1: np.moveaxis(sm(np.moveaxis(x, axis, -1)), -1, axis)),
  ("step5", lambda Q, K, V: ssm(np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1]), axis=-1) @ V),
  ("step5", lambda Q, K, V: np.exp((lambda s: s - logsumexp(s, -1, keepdims=True))(Q @ sw(K) / Q.shape[-1] ** 0.5)) @ V),
  ("step6", lambda Q, K, V, m: ssm(np.where(m, Q @ sw(K) / np.sqrt(Q.shape[-1]), -1e9), axis=-1) @ V),
  ("step6", lambda Q, K, V, m: (lambda w: w / w.sum(-1, keepdims=True))(sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) * m) @ V),
  ("step7", lambda Z, Wq, Wk, Wv: ssm(np.einsum("...id,...jd->...ij", Z @ Wq, Z @ Wk) / np.sqrt(Wk.shape[-1]), axis=-1) @ (Z @ Wv)),
]


@pytest.mark.parametrize(("step", "want", "fn"), PAIR_CASES + SINGLE_CASES,
                         ids=[f"{s}-{'+'.join(sorted(w))}-{i}"
                              for i, (s, w, _) in enumerate(PAIR_CASES + SINGLE_CASES)])
def test_exactly_the_mistakes_made_are_named(step: str, want: set[str], fn: Callable[..., Any]) -> None:
    assert set(ids(step, fn)) == want
    assert set(ids(step, fn, failing_inputs(step, fn))) == want


@pytest.mark.parametrize(("step", "fn"), CORRECT_CASES, ids=[f"{s}-{i}" for i, (s, _) in enumerate(CORRECT_CASES)])
def test_correct_code_in_unusual_styles_gets_no_id(step: str, fn: Callable[..., Any]) -> None:
    assert ids(step, fn) == []
    assert ids(step, fn, _SUITE_INPUTS[step][:6]) == []  # any inputs, as if a test had failed


# ------------------------------------------------ shapes of real public code
# (styles seen in public NumPy attention code: 2-D-only loops in float32, K.T,
# np.dot, a softmax with axis=1 written for matrices, np.expand_dims)
def _softmax_rows_f32(x):
    n, m = x.shape
    out = np.empty((n, m), dtype=np.float32)
    for i in range(n):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def r1(Q, K, V):
    Q, K, V = Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32)
    return _softmax_rows_f32((Q @ K.T) / np.sqrt(np.float32(Q.shape[1]))) @ V


def _soft_max(z):
    t = np.exp(z)
    return np.exp(z) / np.expand_dims(np.sum(t, axis=1), 1)


def r2(Q, K, V):
    return _soft_max(Q @ K.T) @ V


def r7(Q, K, V):
    s = np.dot(Q, K.T) / np.sqrt(K.shape[-1])
    e = np.exp(s)
    return np.dot(e / e.sum(axis=0, keepdims=True), V)


def r3(Q, K, V):
    s = np.dot(Q, K.T) / np.sqrt(K.shape[1])
    return np.exp(s) / np.sum(np.exp(s), axis=1, keepdims=True) @ V


def r5(Q, K, V):
    s = np.matmul(Q, K.transpose(0, 2, 1)) / np.sqrt(Q.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return np.matmul(e / e.sum(-1, keepdims=True), V)


def r6(Q, K, V):
    s = np.matmul(Q, K.T) / np.sqrt(Q.shape[-1])
    s = np.exp(s - np.max(s, axis=-1, keepdims=True))
    s /= np.sum(s, axis=-1, keepdims=True)
    return np.matmul(s, V)


def r8(Q, K, V):
    s = (Q @ K.T) / np.sqrt(Q.shape[-1])
    e = np.exp(s - np.max(s, axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V


def r9(x, axis=-1):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def r10(x, axis=-1):
    e = np.exp(x)
    return e / np.expand_dims(np.sum(e, axis=1), 1)


REAL_CASES = [
    # K.T, then a float32 loop over the rows of a matrix: no batch gets past the loop,
    # so the K.T is read from the file (issue 21: the cause, not only the symptom)
    ("step5", {"transpose-all-axes", "fixed-rank"}, r1),
    # three and four mistakes at once: K.T, a softmax along axis 1 of a batch, no shift, no scale
    ("step5", {"transpose-all-axes", "no-scale", "softmax-wrong-axis", "softmax-unstable"}, r2),
    ("step5", {"transpose-all-axes", "softmax-wrong-axis", "dot-not-batched", "softmax-unstable"}, r7),
    ("step5", {"transpose-all-axes", "softmax-wrong-axis", "softmax-unstable"}, r3),
    ("step5", {"fixed-rank"}, r5),
    ("step5", {"transpose-all-axes"}, r6),
    ("step5", {"transpose-all-axes", "softmax-wrong-axis"}, r8),
    # axis 1 hard-coded: ignores `axis`, and on a 3-D input called with the default
    # normalises axis 1, not the last one (issue 21)
    ("step3", {"softmax-wrong-axis", "ignores-axis"}, r9),
    ("step3", {"softmax-wrong-axis", "ignores-axis", "softmax-unstable"}, r10),
]


@pytest.mark.parametrize(("step", "want", "fn"), REAL_CASES, ids=[fn.__name__ for _, _, fn in REAL_CASES])
def test_real_world_shapes_of_code(step: str, want: set[str], fn: Callable[..., Any]) -> None:
    source = inspect.getsource(fn)  # what the engine reads from the learner's file
    assert set(ids(step, fn, source=source)) == want
    assert set(ids(step, fn, failing_inputs(step, fn), source=source)) == want


# ------------------------------------- mistakes with no id: never a false one
def sc(Q, K):
    return Q @ sw(K) / np.sqrt(Q.shape[-1])


UNCATALOGUED = [
  ("step5", lambda Q, K, V: sm(sc(Q, K)) @ V / np.sqrt(Q.shape[-1])),
  ("step5", lambda Q, K, V: sm(sc(Q, K) ** 2) @ V),
  ("step5", lambda Q, K, V: np.maximum(sc(Q, K), 0) @ V),
  ("step5", lambda Q, K, V: sm(sc(Q, K)) @ V + Q.mean()),
  ("step5", lambda Q, K, V: sm(sc(Q, K))[..., ::-1] @ V),
  ("step5", lambda Q, K, V: sm(-sc(Q, K), axis=-2) @ V),
  ("step5", lambda Q, K, V: sw(sm(sc(Q, K) * 2)) @ V),
  ("step5", lambda Q, K, V: sm(sc(Q, K)) @ V[..., ::-1, :]),
  ("step6", lambda Q, K, V, m: sm(np.where(m, sc(Q, K), -np.inf)) @ V * 0.5),
  ("step6", lambda Q, K, V, m: sm(np.where(m, sc(Q, K), 1.0)) @ V),
  ("step6", lambda Q, K, V, m: sm(np.where(m, -sc(Q, K), -np.inf)) @ V),
  ("step6", lambda Q, K, V, m: sm(np.where(m[..., ::-1], sc(Q, K), -np.inf)) @ V),
  ("step7", lambda Z, Wq, Wk, Wv: sm(sc(Z @ Wq, Z @ Wk)) @ (Z @ Wv) + Z.sum()),
  ("step7", lambda Z, Wq, Wk, Wv: sm(sc(Z @ Wq, Z @ Wk)) @ (Z @ Wv) * 2),
  ("step7", lambda Z, Wq, Wk, Wv: sm(-sc(Z @ Wq, Z @ Wk)) @ (Z @ Wv)),
  ("step8", lambda Z, Wq, Wk, Wv, Wo, h: (Z @ Wv) @ Wo),
  ("step8", lambda Z, Wq, Wk, Wv, Wo, h: np.mean([sm(sc((Z @ Wq)[..., i::h], (Z @ Wk)[..., i::h])) @ (Z @ Wv) for i in range(h)], axis=0) @ Wo),
]


def test_heads_not_split_is_measured_beside_an_uncatalogued_mistake() -> None:
    """One head over the full width, then W_o.T: no reading explains every answer, but the head
    probe (W_o = I, where W_o.T changes nothing) measures one head over every column (issue 39)."""
    def one_head_wo_t(Z, Wq, Wk, Wv, Wo, h):
        return sm(sc(Z @ Wq, Z @ Wk)) @ (Z @ Wv) @ Wo.T

    assert ids("step8", one_head_wo_t) == ["heads-not-split"]


@pytest.mark.parametrize(("step", "fn"), UNCATALOGUED, ids=[f"{s}-{i}" for i, (s, _) in enumerate(UNCATALOGUED)])
def test_mistakes_without_an_id_get_none(step: str, fn: Callable[..., Any]) -> None:
    """Compositions of readings must not imitate a mistake the catalogue does not know."""
    assert ids(step, fn) == []
    assert ids(step, fn, failing_inputs(step, fn)) == []
