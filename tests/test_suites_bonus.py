"""The bonus hidden suites (steps 6-8) pass every correct version and fail every wrong one.

Each labelled implementation in `tests/implementations/step{6,7,8}/` defines just
its step's function: `correct_*` must pass, `wrong_*` must not, and a wrong one
whose docstring says `Expected diagnosis: <id>` must be reported with that id.
A second half checks, with Hypothesis, that the reference itself has the
properties the suites hold learners to (the suites compare against it).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.suites import strategies as S
from attn_practice.reference import attention as R

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
IMPLEMENTATIONS = HERE / "implementations"
STEPS = ("step6", "step7", "step8")
STUBS = {"step6": "step6_masked", "step7": "step7_self_attention", "step8": "step8_multi_head"}
EXPECTED = re.compile(r"Expected diagnosis:\s*([\w, -]+)")

CASES = [
    pytest.param(sid, path, id=f"{sid}/{path.stem}")
    for sid in STEPS
    for path in sorted((IMPLEMENTATIONS / sid).glob("*.py"))
]


@pytest.fixture(scope="module")
def engine():
    # graded as `grade` and a hosted check grade, without shrinking a failing example (a
    # quarter of the time; the verdict and diagnosis are the same; test_replay, test_grade
    # and test_fast_stops cover `check`'s shrinking)
    with Engine(RunOptions(max_examples=25, shrink=False)) as eng:
        yield eng


def _grade(engine: Engine, sid: str, source: str, tmp_path: Path):
    ex = resolve_step(sid)
    (tmp_path / ex.file).write_text(source, encoding="utf-8")
    return engine.grade(tmp_path, [ex]).steps[0]


def _explain(step) -> str:
    return "\n".join(f"  {t.status.value}: {t.name}: {t.message}" for t in step.tests)


def _skip_without_scipy(source: str) -> None:
    """SciPy is a test extra: SciPy-based versions are judged only where it is installed."""
    if "scipy" in source and importlib.util.find_spec("scipy") is None:
        pytest.skip("scipy is not installed")


@pytest.mark.slow
@pytest.mark.parametrize("sid, path", CASES)
def test_labelled_implementation(engine, sid, path, tmp_path):
    source = path.read_text(encoding="utf-8")
    _skip_without_scipy(source)
    step = _grade(engine, sid, source, tmp_path)
    if path.name.startswith("correct_"):
        assert step.status.value == "passed", f"{path.name} should pass:\n{_explain(step)}"
        return
    assert path.name.startswith("wrong_"), f"unlabelled implementation {path.name}"
    assert step.status.value != "passed", f"{path.name} should fail, but passed every hidden test"
    assert any(t.status.value == "failed" for t in step.tests), _explain(step)
    match = EXPECTED.search(source)
    expected = [] if not match or match.group(1).strip() == "none" else \
        [i.strip() for i in match.group(1).split(",")]
    found = [d.id for d in step.diagnoses]
    assert set(expected) <= set(found), f"{path.name}: expected diagnosis {expected}, got {found}"


@pytest.mark.slow
@pytest.mark.parametrize("sid", STEPS)
def test_reference_passes(engine, sid, tmp_path):
    step = _grade(engine, sid, (PACKAGE / "reference" / "attention.py").read_text(encoding="utf-8"),
                  tmp_path)
    assert step.status.value == "passed", _explain(step)


@pytest.mark.slow
@pytest.mark.parametrize("sid", STEPS)
def test_untouched_stub_fails_cleanly(engine, sid, tmp_path):
    stub = PACKAGE / "exercises" / STUBS[sid] / "stub.py"
    step = _grade(engine, sid, stub.read_text(encoding="utf-8"), tmp_path)
    assert step.status.value == "failed", _explain(step)
    assert step.tests and all(t.status.value == "failed" for t in step.tests)
    assert all("not written yet" in t.message for t in step.tests), _explain(step)


# ------------------------------------------------------- the reference's own properties
FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None)


@FAST
@given(inputs=S.masked_inputs(dtype=np.float64), data=st.data())
def test_reference_blocked_values_do_not_matter(inputs, data):
    Q, K, V, mask = inputs
    base = R.masked_attention(Q, K, V, mask)
    j = data.draw(st.integers(0, K.shape[-2] - 1))
    V2 = V.copy()
    V2[..., j, :] = 1e6 * (1.0 + np.arange(V.shape[-1]))
    got = R.masked_attention(Q, K, V2, mask)
    blocked = np.broadcast_to(~mask[..., :, j], base.shape[:-1])
    assert np.array_equal(got[blocked], base[blocked])


@FAST
@given(inputs=S.masked_inputs(dtype=np.float64))
def test_reference_masked_rows_are_weighted_averages(inputs):
    Q, K, V, mask = inputs
    all_true = np.ones(mask.shape, dtype=bool)
    np.testing.assert_allclose(R.masked_attention(Q, K, V, all_true), R.attention(Q, K, V),
                               rtol=1e-12, atol=1e-12)
    out = R.masked_attention(Q, K, V, mask)
    allowed = np.broadcast_to(mask, out.shape[:-1] + (K.shape[-2],))[..., None]
    Vb = np.broadcast_to(V[..., None, :, :], out.shape[:-1] + V.shape[-2:])
    lo = np.where(allowed, Vb, np.inf).min(axis=-2)
    hi = np.where(allowed, Vb, -np.inf).max(axis=-2)
    assert np.all(out >= lo - 1e-9) and np.all(out <= hi + 1e-9)


@FAST
@given(inputs=S.multi_head_inputs(dtype=np.float64))
def test_reference_one_head_is_self_attention(inputs):
    Z, W_q, W_k, W_v, _, _ = inputs
    eye = np.eye(Z.shape[-1])
    np.testing.assert_allclose(R.multi_head_attention(Z, W_q, W_k, W_v, eye, 1),
                               R.self_attention(Z, W_q, W_k, W_v), rtol=1e-12, atol=1e-12)


@FAST
@given(inputs=S.multi_head_inputs(dtype=np.float64))
def test_reference_heads_are_self_attentions_on_column_blocks(inputs):
    Z, W_q, W_k, W_v, W_o, n_heads = inputs
    d_h = Z.shape[-1] // n_heads
    blocks = [slice(h * d_h, (h + 1) * d_h) for h in range(n_heads)]
    heads = [R.self_attention(Z, W_q[:, b], W_k[:, b], W_v[:, b]) for b in blocks]
    np.testing.assert_allclose(R.multi_head_attention(Z, W_q, W_k, W_v, W_o, n_heads),
                               np.concatenate(heads, axis=-1) @ W_o, rtol=1e-9, atol=1e-9)


def test_reference_large_scores_are_finite():
    rng = np.random.default_rng(0)
    Z = 40.0 * rng.normal(size=(2, 5, 4))
    W = rng.normal(size=(4, 4))
    assert np.all(np.isfinite(R.multi_head_attention(Z, W, W, W, W, 2)))
    assert np.all(np.isfinite(R.self_attention(Z, W, W, W)))
    Q = 100.0 * rng.normal(size=(3, 4))
    assert np.all(np.isfinite(R.masked_attention(Q, Q, Q, np.tril(np.ones((3, 3), dtype=bool)))))
