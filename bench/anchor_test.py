"""The plain-pytest anchor of issue 22: a naive autograder for a *two*-function assignment.

No sandbox, no secret examples, no diagnosis: `dot_scores` and `softmax` of
$SUBMISSION imported straight onto `sys.path` and checked with Hypothesis
against the reference, the way a course without attn-practice would. The
side-by-side (`bench/side_by_side.py`) runs it once per submission, two at a
time, as the anchor every rate is a ratio to.
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

settings.register_profile("anchor", max_examples=30, derandomize=True, database=None, deadline=None)
settings.load_profile("anchor")


def arr(shape):
    return hnp.arrays(np.float64, shape, elements=st.floats(-10, 10))


shapes = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))


@given(shapes.flatmap(lambda s: st.tuples(arr((s[0], s[2])), arr((s[1], s[2])))))
def test_dot_scores(qk):
    fn = importlib.import_module("step1_scores").dot_scores
    np.testing.assert_allclose(fn(*qk), ref.dot_scores(*qk), rtol=1e-7, atol=1e-9)


@given(arr((3, 4)), st.integers(-2, 1))
def test_softmax(x, axis):
    fn = importlib.import_module("step3_softmax").softmax
    np.testing.assert_allclose(fn(x, axis=axis), ref.softmax(x, axis), atol=1e-9)
