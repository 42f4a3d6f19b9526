"""float32 answers are judged against what float32 itself achieves on the very input.

A correct float32 attention over d_k = 4096 (long reductions, scores in the
tens) rounds by more than the step's measured float32 tolerance; before, such
an answer failed `grade` (a false fail found by `selftest --course` under one
installation's secret). The same judge still fails an answer off by a fixed
1.5e-4 on ordinary inputs, where float32 is accurate.

A second round: the reference's own float32 miss is one summation order,
and a correct learner's may be another. einsum failed about one float32
example in 5,700 (a `selftest` in CI said "BAD step5 variant einsum"), and a
float32 loop over d_k (the order a learner's own loop sums in) failed over
half of the wide, positive inputs below. The judge now bounds what the
scores' rounding can do through softmax (`suites/scales.py`), for steps 5-8.
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.suites import strategies as S
from attn_practice.grader.suites.assertions import StepContext, StepFailure
from attn_practice.grader.suites.scales import score_allowance
from attn_practice.reference import attention
from attn_practice.reference.variants import variants_for


def _ctx(step: str = "step5") -> StepContext:
    ex = resolve_step(step)
    return StepContext(ex, None, attention.FUNCTIONS[ex.function])  # type: ignore[arg-type]


def _judge(step: str, got, args) -> None:
    """What the hidden suites do with a float32 answer: compare at the step's rounding scale."""
    ctx = _ctx(step)
    ctx.compare(np.asarray(got, dtype=np.float64), ctx.expected(*args), args, scale=ctx.rounding_scale(*args))


def _seq_matmul(A, B):
    """A @ B in the inputs' precision, summed one term at a time along the inner axis (a learner's loop)."""
    acc = np.zeros(A.shape[:-1] + (B.shape[-1],), np.result_type(A, B))
    for d in range(A.shape[-1]):
        acc += A[..., :, d, None] * B[..., d, None, :]
    return acc


def _seq_attention(Q, K, V, mask=None):
    s = _seq_matmul(Q, np.swapaxes(K, -1, -2)) / np.float32(np.sqrt(Q.shape[-1]))
    if mask is not None:
        s = np.where(mask, s, np.float32(-np.inf))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def _seq_self_attention(Z, W_q, W_k, W_v):
    return _seq_attention(_seq_matmul(Z, W_q), _seq_matmul(Z, W_k), _seq_matmul(Z, W_v))


def _seq_multi_head(Z, W_q, W_k, W_v, W_o, n_heads):
    Q, K, V = _seq_matmul(Z, W_q), _seq_matmul(Z, W_k), _seq_matmul(Z, W_v)
    d_h = Q.shape[-1] // n_heads
    heads = [_seq_attention(Q[..., h * d_h:(h + 1) * d_h], K[..., h * d_h:(h + 1) * d_h],
                            V[..., h * d_h:(h + 1) * d_h]) for h in range(n_heads)]
    return _seq_matmul(np.concatenate(heads, axis=-1), W_o)


def _wide_positive(step: str, seed: int) -> tuple:
    """Inputs whose float32 scores are large and positive: where summation order shows most."""
    rng = np.random.default_rng(seed)
    n_k = 2 + seed % 4

    def pos(*shape):
        return rng.uniform(1.0, 10.0, size=shape).astype(np.float32)

    if step in ("step5", "step6"):
        args = (pos(2, 3, 4096), pos(2, n_k, 4096), pos(2, n_k, 1 + seed % 3))
        if step == "step6":
            mask = np.tril(np.ones((3, n_k), dtype=bool), k=n_k - 3) | np.eye(3, n_k, dtype=bool)
            mask[:, 0] = True
            args += (np.broadcast_to(mask, (2, 3, n_k)).copy(),)
        return args
    # projections over d_model = 512 to scores in the hundreds, a few apart
    Z = pos(n_k + 1, 512) / np.float32(10)
    if step == "step7":
        return (Z, *[pos(512, 8) / np.float32(10 * np.sqrt(512)) for _ in range(3)])
    W = [pos(512, 512) / np.float32(10 * np.sqrt(512)) for _ in range(4)]
    return (Z, *W, 2)


SEQUENTIAL = {"step5": _seq_attention, "step6": _seq_attention, "step7": _seq_self_attention,
              "step8": _seq_multi_head}


def _matmul_attention(Q, K, V):
    """The catalogue's 'vectorised' variant: scores by a float32 matmul, the rest as NumPy promotes."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def _einsum_attention(Q, K, V):
    """Another summation order, all in float32."""
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.float32(np.sqrt(Q.shape[-1]))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


@pytest.mark.parametrize("impl", [_matmul_attention, _einsum_attention])
@pytest.mark.parametrize("seed", range(8))
def test_a_correct_float32_answer_over_a_long_reduction_passes(seed, impl):
    # positive inputs from 1 to 10, as the suites' "positive" fill draws: scores near 2,000
    # whose float32 sums round by ~1e-3, so the weights can be no better than that
    rng = np.random.default_rng(seed)
    Q, K = (rng.uniform(1.0, 10.0, size=(1, 2, 4096)).astype(np.float32) for _ in range(2))
    V = rng.uniform(1.0, 10.0, size=(1, 2, 1025)).astype(np.float32)
    ctx = _ctx()
    ctx.compare(np.asarray(impl(Q, K, V), dtype=np.float64), ctx.expected(Q, K, V), (Q, K, V))


def test_an_answer_off_by_a_fixed_amount_still_fails_on_ordinary_float32_input():
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    V = rng.uniform(1.0, 2.0, size=(5, 3)).astype(np.float32)
    ctx = _ctx()
    expected = ctx.expected(Q, K, V)
    with pytest.raises(StepFailure):
        ctx.compare(expected + 1.5e-4, expected, (Q, K, V))


@pytest.mark.parametrize("step", sorted(SEQUENTIAL))
@pytest.mark.parametrize("seed", range(12))
def test_a_float32_loop_over_the_long_axis_passes(step, seed):
    # the old judge failed over half of these for step 5: 4x the reference's (BLAS) miss
    # is no bound on a loop's, which drifts by about sqrt(d_k) roundings
    args = _wide_positive(step, seed)
    _judge(step, SEQUENTIAL[step](*[a.copy() if isinstance(a, np.ndarray) else a for a in args]), args)


#: float32 examples the hidden suites drew (recipes, public values) on which the einsum variant
#: failed before: found by running the step 5 suite in process on 30,000 examples.
FOUND = [
    ("arrays", {"arrays": [[[2, 3, 4096], "<f4", "positive", 16688747, 10.0],
                           [[2, 3, 4096], "<f4", "positive", 3, 10.0],
                           [[2, 3, 1], "<f4", "positive", 20160065, 10.0]]}),
]


@pytest.mark.parametrize("recipe", FOUND, ids=lambda r: "found")
@pytest.mark.parametrize("name", [n for n, _ in variants_for("step5")] + ["sequential"])
def test_every_correct_variant_passes_on_the_inputs_found(recipe, name):
    args = tuple(S.rebuild(recipe, None))
    fn = dict(variants_for("step5")).get(name, _seq_attention)
    _judge("step5", fn(*[a.copy() for a in args]), args)


@pytest.mark.parametrize("step", sorted(SEQUENTIAL))
def test_the_wider_bound_still_fails_a_wrong_scale_on_the_same_inputs(step):
    """Where float32 is least precise, dividing by d_k instead of sqrt(d_k) still fails."""
    args = _wide_positive(step, 0)
    ctx = _ctx(step)
    d_k = args[0].shape[-1] if step in ("step5", "step6") else args[1].shape[-1]
    if step in ("step5", "step6"):
        Q, *rest = args
        wrong = ctx.expected(Q / np.float32(np.sqrt(d_k)), *rest)  # scores / d_k in all
    else:
        Z, W_q, *rest = args
        wrong = ctx.expected(Z, W_q / np.float32(np.sqrt(d_k)), *rest)
    with pytest.raises(StepFailure):
        ctx.compare(wrong, ctx.expected(*args), args, scale=ctx.rounding_scale(*args))


def test_float64_input_is_judged_as_tightly_as_before():
    """The scores' term is in the input's unit roundoff: for float64 it adds nothing that counts."""
    rng = np.random.default_rng(3)
    args = tuple(rng.uniform(1.0, 10.0, size=s) for s in ((2, 3, 4096), (2, 4, 4096), (2, 4, 2)))
    tol = _ctx("step5").tolerance(args)
    assert np.all(score_allowance("step5", args) <= tol.atol / 4)
    as32 = tuple(a.astype(np.float32) for a in args)
    assert np.max(score_allowance("step5", as32)) > 1e6 * np.max(score_allowance("step5", args))
