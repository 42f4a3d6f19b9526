"""Hidden suite for step 2: scale_scores(scores, d_k) -> scores / sqrt(d_k), same shape."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S

pytestmark = pytest.mark.step("step2")


def test_worked_example(step):
    """The lesson's worked example: scores [2, 0, 1] with d_k = 4 become [1, 0, 0.5]."""
    step.check(np.array([[2.0, 0.0, 1.0]]), 4)


def test_several_key_widths(step):
    """Divides by sqrt(d_k), not by d_k or a fixed number, for d_k from 2 to 4096."""
    scores = np.array([[3.0, -1.5, 0.25, 8.0, -6.0],
                       [0.5, 2.0, -4.0, 1.0, 7.5],
                       [-2.0, 0.0, 9.0, -0.75, 1.25]])
    for d_k in (2, 3, 16, 64, 1000, 1025, 2000, 4096):
        step.check(scores, d_k)


def test_d_k_one_changes_nothing(step):
    """With d_k = 1 the scores come back unchanged (sqrt(1) = 1)."""
    scores = np.array([[1.5, -2.0], [0.0, 3.25], [-0.5, 4.0]])
    step.check(scores, 1)


def test_any_shape(step):
    """Works for any shape: a vector, and an array with two batch dimensions."""
    rng = np.random.default_rng(2)
    step.check(np.array([4.0, -2.0, 1.0, 0.5]), 16)
    step.check(rng.normal(size=(2, 3, 4, 5)) * 5, 7)


@given(sd=S.scale_inputs(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, sd):
    """2-D float64 scores and any d_k from 2 to 1024 match the reference."""
    step.check(*sd)


@given(sd=S.scale_inputs(batched=True, dtype=np.float64))
def test_batched_scores(step, sd):
    """Leading batch dimensions are kept: (..., n_q, n_k) in, (..., n_q, n_k) out."""
    step.check(*sd)


@given(sd=S.scale_inputs(dtype=np.float32))
def test_float32_scores(step, sd):
    """float32 scores give the right values (float32 tolerance)."""
    step.check(*sd)


def test_scores_of_any_magnitude(step):
    """Scores from 1e-300 to 1e300 are scaled without overflow or loss."""
    scores = np.array([[1e300, -1e300, 1e-300], [3e150, -7.5e-5, 0.0]])
    step.check(scores, 2)
    step.check(scores, 4096)
