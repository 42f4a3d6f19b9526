"""Hidden suite for step 4: weighted_sum(weights, V) -> (..., n_q, d_v)."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S

pytestmark = pytest.mark.step("step4")

WORKED_WEIGHTS = np.array([[0.50648, 0.18632, 0.30720]])


def _random_weights(rng, shape):
    raw = rng.uniform(0.05, 1.0, size=shape)
    return raw / raw.sum(axis=-1, keepdims=True)


def test_worked_example(step):
    """The lesson's worked example: weights [0.506, 0.186, 0.307] mix the values into about [5.68, 1.55]."""
    step.check(WORKED_WEIGHTS, S.WORKED_V)


def test_one_hot_weights_pick_rows(step):
    """All weight on one key gives exactly that key's value row (a dictionary look-up)."""
    V = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0], [7.0, 0.5, 2.0], [-3.0, 1.0, 0.0]])
    picks = [2, 0, 3, 3, 1]
    weights = np.eye(4)[picks]
    got, expected = step.call_shaped(weights, V)
    step.require(
        bool(np.array_equal(got, V[picks])),
        "with one-hot weights the output rows should be exactly V's rows "
        f"{picks} (in that order)",
        (weights, V),
        details=lambda: f"expected:\n{np.array2string(V[picks])}\ngot:\n{np.array2string(got, precision=6)}",
        hint="Output row i is sum over j of weights[i, j] * V[j]; rows of V are values, one per key.",
    )
    step.compare(got, expected, (weights, V))


def test_different_sizes(step):
    """n_q, n_k and d_v all differ (2 queries, 3 keys, 4-wide values): output is (n_q, d_v)."""
    rng = np.random.default_rng(4)
    step.check(_random_weights(rng, (2, 3)), rng.normal(size=(3, 4)) * 3)
    step.check(_random_weights(rng, (5, 2)), rng.normal(size=(2, 3)) * 3)


def test_square_weights_not_transposed(step):
    """Square weights (n_q == n_k == d_v): row i of the weights mixes the values for query i."""
    weights = np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5], [0.3, 0.3, 0.4]])
    V = np.array([[1.0, 2.0, -1.0], [0.0, -3.0, 4.0], [5.0, 1.0, 0.5]])
    step.check(weights, V)


def test_weights_used_as_given(step):
    """Weights that don't sum to 1 (even negative ones) are used as given, without normalising."""
    weights = np.array([[2.0, -1.0, 0.5], [0.0, 0.0, 0.0], [0.1, 0.2, 0.3], [-0.5, 3.0, 1.0]])
    V = np.array([[1.0, 0.5], [-2.0, 3.0], [4.0, -1.5]])
    step.check(weights, V)


def test_two_batch_dimensions(step):
    """Two and three batch dimensions, and twelve batch entries, with n_q != n_k != d_v: none left out."""
    rng = np.random.default_rng(41)
    step.check(_random_weights(rng, (2, 3, 4, 5)), rng.normal(size=(2, 3, 5, 2)))
    step.check(_random_weights(rng, (12, 2, 3)), rng.normal(size=(12, 3, 2)))
    step.check(_random_weights(rng, (2, 2, 3, 2, 4)), rng.normal(size=(2, 2, 3, 4, 3)))


@given(wv=S.weights_and_values(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, wv):
    """2-D float64 weights (rows summing to 1) and values of every small shape match the reference."""
    step.check(*wv)


@given(wv=S.weights_and_values(batched=True))
def test_batched_float64_and_float32(step, wv):
    """Leading batch dimensions are kept, for float64 and float32 input (float32 tolerance)."""
    step.check_scaled(*wv)


@given(wv=S.weights_and_values())
def test_output_between_values(step, wv):
    """Weights >= 0 summing to 1 give each output within its column of V, and the right values."""
    weights, V = wv
    got, expected = step.call_shaped(weights, V)
    step.require_in_value_range(
        got, V, wv,
        hint="A weighted average (weights >= 0 summing to 1) never overshoots the values; "
             "check which axis of the weights you sum over.",
    )
    step.compare(got, expected, wv, scale=step.rounding_scale(*wv))
