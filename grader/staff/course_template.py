"""`attn-practice course init DIR`: a commented course file and one private test per core step.

The examples are small fixed inputs an instructor can read and change; each
test uses only the public authoring API of CONTRACT §4.2 (the `step` marker
and fixture, `step.check`), and all of them pass on the reference (our tests
run them through `selftest --course`).
"""

from __future__ import annotations

COURSE_FILE = "course.yaml"
PRIVATE_DIR = "private"

COURSE_YAML = """\
# attn-practice course file (written by `attn-practice course init`).
# Grade with:      attn-practice grade SUBMISSION... --course course.yaml
# Check it with:   attn-practice selftest --course course.yaml
# Every mistake here (a step listed twice, points for a step not graded, a
# limit out of range, an unmarked private test) is refused with its line.

# A name shown nowhere but useful to you.
name: my attention course

# The steps every submission is scored on. Leave it out for the default:
# the five core steps, plus any bonus step given points below.
steps: [step1, step2, step3, step4, step5]

# Points per step (default 1 each). Every submission has the same total:
# a step whose file is missing scores 0 of its points.
points:
  step5: 2

# Seconds one call of the learner's function may take (0.05 to 60).
# timeouts:
#   step5: 4.0

# Memory per sandbox in MiB (128 to 4096; default 1024).
# memory_mb: 1024

# `attn-practice host` asks each learner for a student id on joining.
# student_id: true

# Generated examples per hidden test (1 to 2000; more is stricter and slower).
max_examples: 40

# Report Hypothesis-shrunk failing inputs (smaller, slower). Default false.
shrink: false

# Folders of your own pytest files (relative to this file). Keep them out of
# the students' repositories: see "Private suites" in the README.
extra_suites: [private/]

# The environment variable holding the secret that seeds generated inputs.
# secret_env: ATTN_PRACTICE_SECRET
"""

_HEADER = '''\
"""Private tests for {step} (written by `attn-practice course init`).

Each test carries `@pytest.mark.step("{step}")` and takes the `step` fixture:
`step.check(*args, **kwargs)` calls the learner's function in the sandbox and
compares the result with the reference (shape, then values, with the
course's tolerances); `step.call`, `step.expected`, `step.compare` and
`step.require` give finer control. Never import a learner's module here.
The docstring's first line is the name students see.
"""

import numpy as np
import pytest

pytestmark = pytest.mark.step("{step}")
'''

TESTS = {
    "step1": '''

def test_scores_of_a_small_example(step):
    """Scores of two queries against four keys"""
    Q = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    K = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 0.0], [-1.0, 0.0, 1.0], [3.0, 0.0, -2.0]])
    step.check(Q, K)


def test_scores_of_a_batch(step):
    """Scores for a batch of two sequences"""
    rng = np.random.default_rng(1)
    step.check(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)))
''',
    "step2": '''

def test_scaling_by_the_key_width(step):
    """Scores divided by the square root of d_k"""
    scores = np.array([[4.0, -2.0, 8.0], [1.0, 0.0, 16.0]])
    step.check(scores, 16)
''',
    "step3": '''

def test_softmax_of_two_rows(step):
    """Softmax of two rows"""
    step.check(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))


def test_softmax_along_the_first_axis(step):
    """Softmax along axis 0"""
    step.check(np.array([[1.0, 2.0], [3.0, 5.0], [0.0, -1.0]]), axis=0)


def test_softmax_of_large_scores(step):
    """Softmax stays finite for scores near 1000"""
    step.check(np.array([[1000.0, 999.0, 998.0]]))
''',
    "step4": '''

def test_weighted_sum_of_three_values(step):
    """Each output row is the weighted average of V's rows"""
    weights = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])
    V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])
    step.check(weights, V)
''',
    "step5": '''

def test_the_worked_example(step):
    """The lesson's worked example: one query, three keys"""
    Q = np.array([[1.0, 0.0, 1.0, 0.0]])
    K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    V = np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]])
    step.check(Q, K, V)


def test_attention_with_a_batch(step):
    """Attention over a batch of two sequences"""
    rng = np.random.default_rng(5)
    step.check(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3)))
''',
}


def private_test(step: str) -> str:
    """The text of `private/test_private_<step>.py`."""
    return _HEADER.format(step=step) + TESTS[step]


def files() -> dict[str, str]:
    """Relative path -> text of everything `course init` writes."""
    out = {COURSE_FILE: COURSE_YAML}
    for step in TESTS:
        out[f"{PRIVATE_DIR}/test_private_{step}.py"] = private_test(step)
    return out
