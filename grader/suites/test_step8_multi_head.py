"""Hidden suite for step 8: multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads) -> (..., n, d_model)."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S
from attn_practice.reference import attention as R

pytestmark = pytest.mark.step("step8")


def _inputs(seed, batch, n, d_model, z_scale=1.5):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(*batch, n, d_model)) * z_scale
    return rng, Z, [rng.normal(size=(d_model, d_model)) for _ in range(4)]


def test_one_head_is_self_attention(step):
    """With one head and W_o = I, multi-head attention equals self-attention with d_k = d_model."""
    _, Z, (W_q, W_k, W_v, _) = _inputs(8, (), 4, 4)
    args = (Z, W_q, W_k, W_v, np.eye(4), 1)
    got = step.call(*args, expected_size=Z.size)
    expected = np.asarray(R.self_attention(Z, W_q, W_k, W_v), dtype=np.float64)
    step.compare(got, expected, args, scale=step.rounding_scale(*args))


def test_output_projection(step):
    """Two heads of width 3, concatenated in order and multiplied by a general W_o."""
    _, Z, Ws = _inputs(88, (), 4, 6)
    step.check_scaled(Z, *Ws, 2)


def test_heads_are_independent(step):
    """Heads are independent: with W_o = I, changing head h's columns of W_v moves only head h's output."""
    rng, Z, (W_q, W_k, W_v, _) = _inputs(888, (2,), 4, 6)
    n_heads, d_h = 3, 2
    args = (Z, W_q, W_k, W_v, np.eye(6), n_heads)
    base = step.check_scaled(*args)
    tol = step.tolerance(args)
    bound = tol.atol + tol.rtol * step.rounding_scale(*args)
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        W_v2 = W_v.copy()
        W_v2[:, cols] = rng.normal(size=(6, d_h)) * 3.0
        args2 = (Z, W_q, W_k, W_v2, np.eye(6), n_heads)
        got = step.call(*args2, expected_size=base.size)
        step.compare(got, step.expected(*args2), args2, scale=step.rounding_scale(*args2))
        moved = np.abs(got - base) > bound
        own = np.zeros(6, dtype=bool)
        own[cols] = True
        others = [c for c in range(6) if not own[c] and moved[..., c].any()]
        step.require(
            not others,
            f"changing only head {h}'s columns {cols.start}..{cols.stop - 1} of W_v changed output "
            f"column(s) {others}, which belong to other heads (W_o = I, {n_heads} heads of width {d_h})",
            args2,
            hint="Head h must use only columns h*d_h:(h+1)*d_h of Z @ W_q, Z @ W_k and Z @ W_v, and "
                 "its output goes back to those same columns, heads in order.",
        )
        step.require(
            bool(moved[..., cols].any()),
            f"changing head {h}'s columns {cols.start}..{cols.stop - 1} of W_v did not change its own "
            f"output columns (W_o = I, {n_heads} heads of width {d_h})",
            args2,
            hint="Concatenate the heads in order (head 0 first) along the last axis.",
        )


@given(inputs=S.multi_head_inputs(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, inputs):
    """2-D float64 inputs with 1, 2 or 3 heads of every small width match the reference."""
    step.check_scaled(*inputs)


@given(inputs=S.multi_head_inputs(batched=True, dtype=np.float64))
def test_batched_inputs(step, inputs):
    """A batch of sequences Z (..., n, d_model) keeps its batch axes."""
    step.check_scaled(*inputs)


@given(inputs=S.multi_head_inputs(dtype=np.float32))
def test_float32_inputs(step, inputs):
    """float32 inputs give the right values (float32 tolerance)."""
    step.check_scaled(*inputs)


def test_four_dimensional_batch(step):
    """Two batch dimensions and three heads of width 2 at once."""
    _, Z, Ws = _inputs(8888, (2, 3), 5, 6)
    step.check_scaled(Z, *Ws, 3)


def test_large_scores_stay_finite(step):
    """Scores in the thousands in every head still give finite, correct output."""
    rng = np.random.default_rng(88888)
    n, d_model, n_heads = 4, 4, 2
    Z = 30.0 * rng.normal(size=d_model) + 0.02 * rng.normal(size=(n, d_model))
    W_q = rng.normal(size=(d_model, d_model))
    W_k = W_q + 0.1 * rng.normal(size=(d_model, d_model))
    W_v, W_o = rng.normal(size=(d_model, d_model)), rng.normal(size=(d_model, d_model))
    d_h = d_model // n_heads
    Q, K = Z @ W_q, Z @ W_k
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        scores = R.dot_scores(Q[:, cols], K[:, cols]) / np.sqrt(d_h)
        assert 1e3 < scores.min() and scores.max() < 1e5  # self-check
    step.check_scaled(Z, W_q, W_k, W_v, W_o, n_heads)


def test_one_to_sixteen_heads(step):
    """1, 2, 4, 8 and 16 heads over the same width: every head is computed, in order."""
    for n_heads in (1, 2, 4, 8, 16):
        rng, Z, Ws = _inputs(80 + n_heads, (), 3, 16)
        step.check_scaled(Z, *[w * 0.5 for w in Ws], n_heads)
