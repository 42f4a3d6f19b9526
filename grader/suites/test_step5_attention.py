"""Hidden suite for step 5: attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S

pytestmark = pytest.mark.step("step5")


def _require_between_values(step, got, Q, K, V):
    """Every output entry lies between the smallest and largest entry of its column of V."""
    step.require_in_value_range(
        got, V, (Q, K, V),
        hint="Each output row is a weighted average of V's rows (softmax weights are >= 0 and "
             "sum to 1 over the keys), so it can never overshoot them.",
    )


def test_worked_example(step):
    """The lesson's worked example: q = [1, 0, 1, 0] with three keys and values gives about [5.68, 1.55]."""
    step.check(S.WORKED_Q, S.WORKED_K, S.WORKED_V)


def test_different_sizes(step):
    """n_q != n_k and d_k != d_v (up to 40 keys, d_k up to 4096, float32 too): output is (n_q, d_v)."""
    rng = np.random.default_rng(5)
    step.check(rng.normal(size=(3, 6)), rng.normal(size=(5, 6)), rng.normal(size=(5, 2)) * 3)
    step.check(rng.normal(size=(4, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2, 7)) * 3)
    # 40 keys; rows 4096 wide; float32 with positive values (no cancellation hides an error)
    step.check(rng.normal(size=(3, 4)), rng.normal(size=(40, 4)), rng.normal(size=(40, 2)))
    step.check(rng.normal(size=(2, 4096)) * 0.2, rng.normal(size=(3, 4096)) * 0.2, rng.normal(size=(3, 2)))
    Q, K = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(2, 5, 4)).astype(np.float32)
    V = rng.uniform(1.0, 2.0, size=(2, 5, 3)).astype(np.float32)
    step.check_scaled(Q, K, V)


def test_batch_dimensions(step):
    """One, two and three leading batch dimensions are kept, with n_q != n_k and d_k != d_v."""
    rng = np.random.default_rng(51)
    step.check(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3)))
    step.check(rng.normal(size=(2, 3, 2, 5)), rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 4, 3)))
    step.check(rng.normal(size=(2, 2, 3, 2, 3)), rng.normal(size=(2, 2, 3, 4, 3)), rng.normal(size=(2, 2, 3, 4, 2)))


def test_large_scores_stay_finite(step):
    """Large scores (entries of Q and K up to 100, scores near 1e4) give finite, correct output."""
    rng = np.random.default_rng(52)
    Q = rng.uniform(30.0, 100.0, size=(3, 4))
    near = 50.0 + rng.uniform(-0.02, 0.02, size=(5, 4))  # scores ~1e4 that differ by about 1
    spread = rng.uniform(-100.0, 100.0, size=(5, 4))  # scores up to ~2e4 apart
    V = rng.normal(size=(5, 3)) * 4
    for K in (near, spread):
        for q in (Q, -Q):
            got, expected = step.call_shaped(q, K, V)
            step.require(
                bool(np.all(np.isfinite(got))),
                f"NaN or inf in the output for scores as large as "
                f"{float(np.max(np.abs(q @ K.T))) / 2:.3g}",
                (q, K, V),
                hint="exp of a large score overflows: subtract each row's maximum score before "
                     "the exponential (softmax is unchanged by it).",
            )
            step.compare(got, expected, (q, K, V))
    # scores between 1e3 and 1e5 that differ by tens: the weights follow the differences
    step.check(np.array([[300.0, 0.0], [-200.0, 150.0]]), np.array([[10.0, 1.0], [10.2, -1.0], [-9.0, 40.0]]),
               np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]))


def test_permuting_keys_and_values(step):
    """Reordering the keys and the values together (the same way) leaves the output unchanged."""
    rng = np.random.default_rng(53)
    for batch in ((), (2,)):
        Q = rng.normal(size=batch + (3, 4))
        K = rng.normal(size=batch + (5, 4))
        V = rng.normal(size=batch + (5, 2)) * 3
        got, expected = step.call_shaped(Q, K, V)
        for perm in (np.arange(5)[::-1], rng.permutation(5)):
            Kp, Vp = K[..., perm, :], V[..., perm, :]
            moved, _ = step.call_shaped(Q, Kp, Vp)
            step.require(
                bool(np.allclose(moved, got, rtol=1e-6, atol=1e-9)),
                f"reordering keys and values together (order {perm.tolist()}) changed the output",
                (Q, Kp, Vp),
                details=lambda got=got, moved=moved: (
                    f"original order: {np.array2string(got, precision=5)}\n"
                    f"reordered:      {np.array2string(moved, precision=5)}"),
                hint="Key j belongs to value j: the weights for the keys must multiply the matching "
                     "value rows, whatever order they come in.",
            )
        step.compare(got, expected, (Q, K, V))


@given(qkv=S.qkv_arrays(batched=False, dtype=np.float64))
def test_matches_reference_2d(step, qkv):
    """2-D float64 inputs of every small shape match the reference; each output row lies within V's rows."""
    got, expected = step.call_shaped(*qkv)
    _require_between_values(step, got, *qkv)
    step.compare(got, expected, qkv, scale=step.rounding_scale(*qkv))


@given(qkv=S.qkv_arrays(batched=True, dtype=np.float64))
def test_batched_inputs(step, qkv):
    """Leading batch dimensions are kept: (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v) -> (..., n_q, d_v)."""
    step.check(*qkv, scale=step.rounding_scale(*qkv))


@given(qkv=S.qkv_arrays(dtype=np.float32))
def test_float32_inputs(step, qkv):
    """float32 inputs give the right values (float32 tolerance); output rows lie within V's rows."""
    got, expected = step.call_shaped(*qkv)
    _require_between_values(step, got, *qkv)
    step.compare(got, expected, qkv, scale=step.rounding_scale(*qkv))
