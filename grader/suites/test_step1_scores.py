"""Hidden suite for step 1: dot_scores(Q, K) -> (..., n_q, n_k)."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S

pytestmark = pytest.mark.step("step1")


def test_worked_example(step):
    """The lesson's worked example: q = [1, 0, 1, 0] against three keys gives [2, 0, 1]."""
    step.check(S.WORKED_Q, S.WORKED_K)


def test_more_queries_than_keys(step):
    """Three queries, two keys: the result has one row per query, one column per key."""
    Q = np.array([[1.0, 2.0], [0.0, 1.0], [-1.0, 0.5]])
    K = np.array([[1.0, 0.0], [2.0, -1.0]])
    step.check(Q, K)


@given(qk=S.qk_arrays(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, qk):
    """2-D float64 inputs of every small shape match the reference."""
    step.check_scaled(*qk)  # sums of terms up to 1e200 that cancel: judged at the terms' size


@given(qk=S.qk_arrays(batched=True, dtype=np.float64))
def test_batched_inputs(step, qk):
    """Leading batch dimensions are kept: (..., n_q, d_k) x (..., n_k, d_k) -> (..., n_q, n_k)."""
    step.check_scaled(*qk)


@given(qk=S.qk_arrays(dtype=np.float32))
def test_float32_inputs(step, qk):
    """float32 inputs give the right values (float32 tolerance)."""
    step.check_scaled(*qk)


def test_four_dimensional_batch(step):
    """Two batch dimensions at once, with n_q != n_k != d_k."""
    rng = np.random.default_rng(1)
    step.check(rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5)))


def test_wide_rows_and_three_batch_dims(step):
    """Rows 4096 wide (d_k far beyond 1024), and three batch dimensions at once (5-D input)."""
    rng = np.random.default_rng(101)
    step.check(rng.normal(size=(2, 4096)), rng.normal(size=(3, 4096)))
    step.check(rng.normal(size=(2, 3, 2, 2, 3)), rng.normal(size=(2, 3, 2, 4, 3)))
