"""Hidden suite for step 7: self_attention(Z, W_q, W_k, W_v) -> (..., n, d_v)."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S
from attn_practice.reference import attention as R

pytestmark = pytest.mark.step("step7")


def test_identity_projections(step):
    """With W_q = W_k = W_v = I, self-attention is attention(Z, Z, Z)."""
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(4, 3)) * 1.5
    eye = np.eye(3)
    step.check_scaled(Z, eye, eye, eye)


def test_distinct_widths(step):
    """d_model, d_k and d_v all differ, and W_q, W_k, W_v each play their own role."""
    rng = np.random.default_rng(77)
    n, d_model, d_k, d_v = 4, 5, 3, 2
    Z = rng.normal(size=(n, d_model)) * 1.5
    W_q, W_k, W_v = (rng.normal(size=(d_model, d)) for d in (d_k, d_k, d_v))
    step.check_scaled(Z, W_q, W_k, W_v)


@given(inputs=S.projection_inputs(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, inputs):
    """2-D float64 inputs of every small shape (d_k != d_v too) match the reference."""
    step.check_scaled(*inputs)


@given(inputs=S.projection_inputs(batched=True, dtype=np.float64))
def test_batched_inputs(step, inputs):
    """A batch of sequences Z (..., n, d_model) with shared 2-D weights keeps its batch axes."""
    step.check_scaled(*inputs)


@given(inputs=S.projection_inputs(dtype=np.float32))
def test_float32_inputs(step, inputs):
    """float32 inputs give the right values (float32 tolerance)."""
    step.check_scaled(*inputs)


def test_four_dimensional_batch(step):
    """Two batch dimensions at once, with n, d_model, d_k and d_v all different."""
    rng = np.random.default_rng(777)
    Z = rng.normal(size=(2, 3, 4, 5))
    step.check_scaled(Z, rng.normal(size=(5, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 3)))


def test_large_scores_stay_finite(step):
    """Projected scores in the thousands still give finite, correct output."""
    rng = np.random.default_rng(7777)
    n, d_model, d_k, d_v = 4, 3, 2, 3
    Z = 30.0 * rng.normal(size=d_model) + 0.02 * rng.normal(size=(n, d_model))
    W_q = rng.normal(size=(d_model, d_k))
    W_k = W_q + 0.1 * rng.normal(size=(d_model, d_k))
    W_v = rng.normal(size=(d_model, d_v))
    scores = R.dot_scores(Z @ W_q, Z @ W_k) / np.sqrt(d_k)
    assert 1e3 < scores.min() and scores.max() < 1e5  # self-check
    step.check_scaled(Z, W_q, W_k, W_v)
