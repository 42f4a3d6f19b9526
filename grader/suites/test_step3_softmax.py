"""Hidden suite for step 3: softmax(x, axis=-1), stable, along any axis."""

import numpy as np
import pytest
from hypothesis import given

from attn_practice.grader.suites import strategies as S

pytestmark = pytest.mark.step("step3")


def _axis_text(kwargs):
    return f"axis={kwargs['axis']}" if "axis" in kwargs else "the default axis"


def _require_distribution(step, got, x, kwargs):
    """Every weight is in [0, 1] and every slice along the axis sums to 1."""
    axis = kwargs.get("axis", -1)
    tol = step.tolerance((x,))
    step.require(
        bool(np.all(got >= 0)),
        lambda: f"negative weights: the smallest entry is {float(np.min(got)):.6g}",
        (x,), kwargs,
        hint="exp(...) is never negative, and neither is a sum of exponentials.",
    )
    sums = np.sum(got, axis=axis)
    worst = float(np.max(np.abs(sums - 1.0))) if sums.size else 0.0
    step.require(
        worst <= tol.atol + tol.rtol,
        lambda: f"slices along {_axis_text(kwargs)} do not sum to 1 (the worst sums to "
                f"{float(sums.flat[int(np.argmax(np.abs(sums - 1.0)))]):.6g})",
        (x,), kwargs,
        details=lambda: f"sums along {_axis_text(kwargs)}: {np.array2string(sums, precision=6)}",
        hint="Divide the exponentials by their sum along the same axis (keepdims=True).",
    )


def test_worked_example(step):
    """The lesson's worked example: [1, 0, 0.5] gives weights about [0.506, 0.186, 0.307]."""
    step.check(np.array([[1.0, 0.0, 0.5]]))


def test_default_axis_is_last(step):
    """Called without `axis`, softmax normalises along the last axis (each row sums to 1)."""
    rng = np.random.default_rng(3)
    for x in (rng.normal(size=(3, 5)) * 2, rng.normal(size=(4, 4)) * 2, rng.normal(size=(2, 3, 4)) * 2):
        got, expected = step.call_shaped(x)
        _require_distribution(step, got, x, {})
        step.compare(got, expected, (x,))


def test_both_axes_of_a_matrix(step):
    """2-D arrays, square and not, normalised along axis=0, 1, -1 and -2 as asked (by keyword and positionally)."""
    rng = np.random.default_rng(31)
    for x in (rng.normal(size=(3, 5)) * 2, rng.normal(size=(4, 4)) * 2):
        for axis in (0, 1, -1, -2):
            step.check(x, axis=axis)
            step.check(x, axis)


def test_every_axis_of_higher_rank_arrays(step):
    """3-D and 4-D arrays, normalised along every axis, negative ones too."""
    rng = np.random.default_rng(32)
    for x in (rng.normal(size=(2, 3, 4)) * 2, rng.normal(size=(2, 3, 2, 4)) * 2):
        for axis in range(-x.ndim, x.ndim):
            step.check(x, axis=axis)


def test_one_dimensional_input(step):
    """A plain vector works, with the default axis and axis=0 or -1, and slices from 6 to 40 entries long."""
    x = np.array([1.0, 0.0, 0.5, -2.0, 3.0])
    step.check(x)
    step.check(x, axis=0)
    step.check(x, axis=-1)
    rng = np.random.default_rng(34)
    for n in (6, 7, 12, 40):
        step.check(rng.normal(size=n) * 3)
        step.check(rng.normal(size=(n, 3)) * 3, axis=0)


def test_large_inputs_and_shifts(step):
    """Large inputs give finite, correct weights: shifts up to 1e8 change nothing; ties at 1e300 share the weight."""
    rng = np.random.default_rng(33)
    spread = rng.uniform(-1000.0, 1000.0, size=(3, 4))
    spread[0] = [1000.0, 999.5, 998.0, -1000.0]
    step.check(spread)
    x = np.array([[1.0, 0.0, 0.5, -2.0], [3.0, 3.0, -1.0, 0.25], [0.0, -0.5, 10.0, 9.5]])
    base = step.check(x)
    for c in (-1000.0, 800.0, 1e4, 1e8):
        shifted = x + c
        got, expected = step.call_shaped(shifted)
        step.require(
            bool(np.all(np.isfinite(got))),
            f"softmax(x + {c:g}) contains NaN or inf",
            (shifted,), {},
            hint="exp overflows above about 709 (and gives 0 below about -745): subtract each "
                 "slice's maximum before exponentiating; it does not change the result.",
        )
        step.require(
            bool(np.allclose(got, base, rtol=1e-5, atol=1e-8)),
            f"softmax(x + {c:g}) differs from softmax(x): adding the same number to every "
            "entry must not change the weights",
            (shifted,), {},
            details=lambda got=got: f"softmax(x):     {np.array2string(base, precision=5)}\n"
                                    f"softmax(x + c): {np.array2string(got, precision=5)}",
            hint="Softmax is shift-invariant; clipping or rounding the input breaks that.",
        )
        step.compare(got, expected, (shifted,))
    # equal entries as large as 1e300 (3e38 in float32) share the weight: [1e300, 1e300] gives [0.5, 0.5]
    step.check(np.array([1e300, 1e300]))
    step.check(np.array([[-1e300, 5e299, 5e299], [1e300, 1e300, 1e300]]))
    step.check(np.array([3e38, 3e38, -3e38], dtype=np.float32))


@given(xa=S.softmax_inputs())
def test_any_rank_any_axis(step, xa):
    """Any rank, any axis, float64 or float32: weights are in [0, 1], sum to 1, and match the reference."""
    x, axis = xa
    if x.size % 2:  # the axis positionally, as softmax(x, 0)
        got, expected = step.call_shaped(x, axis)
        _require_distribution(step, got, x, {"axis": axis})
        step.compare(got, expected, (x, axis))
        return
    kwargs = {"axis": axis}
    got, expected = step.call_shaped(x, **kwargs)
    _require_distribution(step, got, x, kwargs)
    step.compare(got, expected, (x,), kwargs)


@given(xa=S.softmax_inputs(neg_inf=True))
def test_minus_infinity_gets_zero_weight(step, xa):
    """-inf entries get weight exactly 0 (the other entries still match the reference)."""
    x, axis = xa
    kwargs = {"axis": axis}
    got, expected = step.call_shaped(x, **kwargs)
    holes = x == -np.inf
    # the strategy plants at least one -inf (shrinking keeps it): the test's name holds for its input
    step.require(
        bool(np.all(got[holes] == 0)),
        lambda: "an entry that was -inf did not get weight exactly 0 (got "
        + ("NaN" if np.isnan(got[holes]).any() else f"{float(np.max(np.abs(got[holes]))):.6g}") + ")",
        (x,), kwargs,
        hint="exp(-inf) is exactly 0; NaN appears when you compute -inf - (-inf) or 0/0.",
    )
    step.compare(got, expected, (x,), kwargs)


@given(xa=S.softmax_inputs(huge=True))
def test_huge_inputs_stay_finite(step, xa):
    """Inputs as large as 1e300 (1e38 in float32) give finite weights in [0, 1] that match the reference."""
    x, axis = xa
    kwargs = {"axis": axis}
    got, expected = step.call_shaped(x, **kwargs)
    bad = ~np.isfinite(got)
    step.require(
        not bool(np.any(bad)),
        f"NaN or inf in the output for input as large as {float(np.max(np.abs(x))):.3g} "
        f"({int(np.sum(bad))} of {got.size} entries)",
        (x,), kwargs,
        hint="exp overflows for inputs above about 709: subtract each slice's maximum "
             "(np.max(x, axis=axis, keepdims=True)) before exponentiating.",
    )
    step.require(
        bool(np.all((got >= -1e-12) & (got <= 1 + 1e-12))),
        f"weights outside [0, 1]: the smallest is {float(np.min(got)):.6g}, "
        f"the largest {float(np.max(got)):.6g}",
        (x,), kwargs,
        hint="Softmax weights are exponentials divided by their sum: each lies in [0, 1].",
    )
    # Finite and in range is not enough: exp(x - log(sum(exp(x)))) with a logsumexp that
    # loses the small terms gives [1, 1] for [1e300, 1e300]. The values must be right.
    step.compare(got, expected, (x,), kwargs)
