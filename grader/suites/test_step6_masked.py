"""Hidden suite for step 6: masked_attention(Q, K, V, mask) -> (..., n_q, d_v)."""

from importlib import resources

import numpy as np
import pytest
import yaml
from hypothesis import given

from attn_practice.grader.suites import strategies as S
from attn_practice.reference import attention as R

pytestmark = pytest.mark.step("step6")


def _mask(rng, shape, p_allowed=0.5):
    """A random boolean mask with at least one True (allowed key) in every row."""
    mask = rng.random(shape) < p_allowed
    rows = mask.reshape(-1, shape[-1])
    for row in rows:
        if not row.any():
            row[rng.integers(shape[-1])] = True
    return rows.reshape(shape)


def _causal(n_q, n_k):
    """Query i may see keys 0..i."""
    return np.tril(np.ones((n_q, n_k), dtype=bool))


def _call_same_shape(step, base, *args):
    """The learner's output on changed inputs, failing as usual if its shape is wrong."""
    got = step.call(*args, expected_size=base.size)
    if got.shape != base.shape:
        step.compare(got, step.expected(*args), args)
    return got


def _sentence():
    """The lesson's toy sentence ("The animal didn't cross the street ..."): its Q, K and V."""
    data = yaml.safe_load(resources.files("attn_practice.exercises").joinpath("data/sentence.yaml")
                          .read_text(encoding="utf-8"))
    return tuple(np.array(data[k], dtype=np.float64) for k in ("queries", "keys", "values"))


def test_worked_example(step):
    """The lesson's example with the first key blocked (mask [[False, True, True]]) gives ~[[1.245, 3.133]]."""
    step.check(S.WORKED_Q, S.WORKED_K, S.WORKED_V, np.array([[False, True, True]]))


def test_causal_sentence(step):
    """The lesson's sentence under a causal mask: every token looks only at itself and earlier tokens."""
    Q, K, V = _sentence()
    n = Q.shape[0]
    step.check(Q, K, V, _causal(n, n))


@given(inputs=S.masked_inputs(batched=False, dtype=np.float64))
def test_random_and_causal_masks(step, inputs):
    """2-D float64 inputs with random and causal (n_q, n_k) masks match the reference."""
    step.check_scaled(*inputs)


@given(inputs=S.masked_inputs(batched=True, dtype=np.float64))
def test_batched_inputs(step, inputs):
    """Batch dimensions, with one shared (n_q, n_k) mask or one mask per example (..., n_q, n_k)."""
    step.check_scaled(*inputs)


@given(inputs=S.masked_inputs(dtype=np.float32))
def test_float32_inputs(step, inputs):
    """float32 inputs give the right values (float32 tolerance)."""
    Q, K, V, mask = inputs
    # Moderate scores (|Q|, |K| <= 2.5; dividing by 4 is exact) keep every allowed weight far
    # from float32 underflow, whatever order a correct implementation masks and shifts in.
    Q, K = Q / np.float32(4), K / np.float32(4)
    step.check(Q, K, V, mask, scale=step.rounding_scale(Q, K, V, mask))


def test_shared_mask_over_a_batch(step):
    """One (n_q, n_k) mask applies to every example of a batch; a (batch, n_q, n_k) mask per example."""
    rng = np.random.default_rng(6)
    Q, K, V = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(2, 3, 6, 2))
    Q *= 2.0
    shared = _mask(rng, (4, 6))
    step.check(Q, K, V, shared, scale=step.rounding_scale(Q, K, V, shared))
    per_example = _mask(rng, (2, 3, 4, 6))
    step.check(Q, K, V, per_example, scale=step.rounding_scale(Q, K, V, per_example))


def test_blocked_values_are_ignored(step):
    """Blocked keys get weight exactly 0: changing V[j] (to ~1e5) leaves rows that may not see key j unchanged."""
    rng = np.random.default_rng(66)
    Q, K, V = rng.normal(size=(2, 4, 3)) * 2.0, rng.normal(size=(2, 5, 3)) * 2.0, rng.normal(size=(2, 5, 2))
    mask = _mask(rng, (2, 4, 5))
    mask[0, :, 4] = False  # key 4 of the first example is blocked for every query
    mask[0, :, 0] = True  # ... and key 0 allowed, so no row is left without a key
    base = step.check(Q, K, V, mask, scale=step.rounding_scale(Q, K, V, mask))
    tol = step.tolerance((Q,))
    # Unchanged up to rounding: inputs reach the learner in varying memory layouts, and a
    # correct einsum may sum in another order on each; a weight that is not 0 moves by ~1e5.
    bound = tol.atol + tol.rtol * step.rounding_scale(Q, K, V, mask)
    for j in range(K.shape[-2]):
        V2 = V.copy()
        V2[:, j, :] = rng.uniform(1e5, 1e6, size=(2, 2)) * np.array([1.0, -1.0])
        got = _call_same_shape(step, base, Q, K, V2, mask)
        blocked = ~mask[:, :, j]  # (batch, n_q): rows that must not see key j
        moved = blocked & np.any(np.abs(got - base) > bound, axis=-1)
        if np.any(moved):
            b, i = (int(x) for x in np.argwhere(moved)[0])
            step.require(
                False,
                f"key {j} is blocked for query {i} (batch {b}), yet changing V[{b}, {j}] changed "
                f"output row {i}: from {base[b, i]} to {got[b, i]}",
                (Q, K, V2, mask),
                details=f"mask[{b}, {i}] = {mask[b, i]}",
                hint="A blocked pair must get weight exactly 0, so its value row cannot matter. "
                     "Set blocked scores to -inf before the softmax, and check which of True and "
                     "False means 'allowed'.",
            )
        # the property first (it teaches more), then the values
        step.compare(got, step.expected(Q, K, V2, mask), (Q, K, V2, mask),
                     scale=step.rounding_scale(Q, K, V2, mask))


def test_causal_mask_hides_the_future(step):
    """With a causal mask, output row i does not depend on the keys and values after position i."""
    rng = np.random.default_rng(666)
    n, d_k, d_v = 5, 3, 2
    Q, K, V = rng.normal(size=(2, n, d_k)) * 2.0, rng.normal(size=(2, n, d_k)) * 2.0, rng.normal(size=(2, n, d_v))
    mask = _causal(n, n)
    base = step.check(Q, K, V, mask, scale=step.rounding_scale(Q, K, V, mask))
    tol = step.tolerance((Q,))
    for i in range(n - 1):
        K2, V2 = K.copy(), V.copy()
        K2[:, i + 1:] = rng.normal(size=K2[:, i + 1:].shape) * 2.0
        V2[:, i + 1:] = rng.uniform(1e5, 1e6, size=V2[:, i + 1:].shape)
        got = _call_same_shape(step, base, Q, K2, V2, mask)
        # Bounded, not bit-exact: a correct version may shift by the max over all keys, which
        # moves when a later key changes; the changed values (~1e5) would show far above this.
        bound = tol.atol + tol.rtol * step.rounding_scale(Q, K, V, mask)[:, : i + 1]
        moved = np.abs(got[:, : i + 1] - base[:, : i + 1]) > bound
        if np.any(moved):
            b, r = (int(x) for x in np.argwhere(moved)[0][:2])
            step.require(
                False,
                f"with a causal mask, changing keys and values after position {i} changed output "
                f"row {r} (batch {b}): from {base[b, r]} to {got[b, r]}",
                (Q, K2, V2, mask),
                hint="Query i may only attend to keys 0..i (mask True); later keys need weight "
                     "exactly 0.",
            )
        step.compare(got, step.expected(Q, K2, V2, mask), (Q, K2, V2, mask),
                     scale=step.rounding_scale(Q, K2, V2, mask))


def test_large_scores_stay_finite(step):
    """Scores in the thousands (blocked and allowed alike) still give finite, correct output."""
    rng = np.random.default_rng(6666)
    n_q, n_k, d_k, d_v = 3, 5, 4, 2
    direction = rng.normal(size=d_k)
    Q = 60.0 * direction + rng.normal(size=(n_q, d_k))
    K = 60.0 * direction + 0.05 * rng.normal(size=(n_k, d_k))
    V = rng.normal(size=(n_k, d_v))
    mask = _mask(rng, (n_q, n_k), 0.6)
    scores = R.dot_scores(Q, K) / np.sqrt(d_k)
    assert 1e3 < scores.min() and scores.max() < 1e5 and np.ptp(scores, axis=-1).max() < 50  # self-check
    step.check(Q, K, V, mask, scale=step.rounding_scale(Q, K, V, mask))


def test_every_mask_form_that_broadcasts(step):
    """With batch (2, 3): masks of shape (n_q, n_k), (1, n_q, n_k), (3, n_q, n_k), (1, 1, ...), (2, 1, ...) and (2, 3, ...)."""
    rng = np.random.default_rng(67)
    Q, K, V = rng.normal(size=(2, 3, 4, 3)), rng.normal(size=(2, 3, 5, 3)), rng.normal(size=(2, 3, 5, 2))
    for lead in ((), (1,), (3,), (1, 1), (2, 1), (2, 3)):
        mask = _mask(rng, lead + (4, 5))
        step.check(Q, K, V, mask, scale=step.rounding_scale(Q, K, V, mask))
