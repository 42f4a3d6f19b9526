"""The floor for batch grading: plain pytest, no sandbox, one run per submission.

Equivalent checks of the five core steps (three Hypothesis properties each
where we have them), importing the submission directly from $SUBMISSION the
way a naive autograder would.
"""

import importlib
import os
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

sys.path.insert(0, os.environ["SUBMISSION"])
from attn_practice.reference import attention as ref  # noqa: E402

settings.register_profile("bench", max_examples=30, derandomize=True, database=None, deadline=None)
settings.load_profile("bench")


def mod(name, fn):
    return getattr(importlib.import_module(name), fn)


def arr(shape):
    return hnp.arrays(np.float64, shape, elements=st.floats(-10, 10))


shapes = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))


@given(shapes.flatmap(lambda s: st.tuples(arr((s[0], s[2])), arr((s[1], s[2])))))
def test_step1(qk):
    np.testing.assert_allclose(mod("step1_scores", "dot_scores")(*qk), ref.dot_scores(*qk), rtol=1e-7, atol=1e-9)


@given(arr((3, 4)), st.integers(1, 64))
def test_step2(s, d):
    np.testing.assert_allclose(mod("step2_scale", "scale_scores")(s, d), ref.scale_scores(s, d), rtol=1e-7)


@given(arr((3, 4)), st.integers(-2, 1))
def test_step3(x, axis):
    np.testing.assert_allclose(mod("step3_softmax", "softmax")(x, axis=axis), ref.softmax(x, axis), atol=1e-9)


@given(arr((3, 4)), arr((4, 2)))
def test_step4(w, v):
    np.testing.assert_allclose(mod("step4_weighted_sum", "weighted_sum")(w, v), ref.weighted_sum(w, v), atol=1e-9)


@given(arr((2, 3)), arr((4, 3)), arr((4, 2)))
def test_step5(q, k, v):
    np.testing.assert_allclose(mod("step5_attention", "attention")(q, k, v), ref.attention(q, k, v), atol=1e-8)
