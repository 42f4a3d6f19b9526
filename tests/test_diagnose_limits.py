"""A call our limits stopped is no evidence about the learner's mistake.

Seen in CI: step 4's `np.dot(weights, V)` was named `fixed-rank` instead of
`dot-not-batched` because one replayed failing input had a batch large enough
that np.dot's answer (every batch against every batch) was far larger than
asked for; the sandbox refused it, and "no answer on a batch" read as "this
code only runs on matrices". A timeout on a loaded machine does the same.
Such calls now drop out of the diagnosis; a learner's own exception still
counts (it is how `fixed-rank` is seen at all).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attn_practice.grader.engine.diagnose import diagnose
from attn_practice.grader.results import Failure, FailureKind
from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner, LearnerError
from attn_practice.reference.mistakes import weighted_sum__dot_not_batched


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _failing() -> list[tuple[np.ndarray, np.ndarray]]:
    """The CI failure's inputs (a batch of one among them), then one large batch."""
    rng = np.random.default_rng(4)
    return [
        (np.array([[[1.0]]]), np.array([[[-2.0]]])),
        (_softmax(rng.standard_normal((1, 2, 4))), rng.standard_normal((1, 4, 3))),
        (_softmax(rng.standard_normal((2, 3, 4, 5))), rng.standard_normal((2, 3, 5, 2))),
        # np.dot: (40, 8) + (40,) + (8,) = 102,400 numbers for an answer of 2,560
        (_softmax(rng.standard_normal((40, 8, 8))), rng.standard_normal((40, 8, 8))),
    ]


def _limited(fn: Callable[..., Any], kind: FailureKind, over: int) -> Callable[..., np.ndarray]:
    """`fn`, stopped by a grader limit of `kind` whenever its answer has more than `over` numbers."""
    def call(*args: Any) -> np.ndarray:
        out = np.asarray(fn(*args), dtype=np.float64)
        if out.size > over:
            raise LearnerError(Failure(kind=kind, summary="stopped by a limit"), kind=kind)
        return out
    return call


def _ids(step: str, call: Callable[..., Any], failing: list[Any]) -> list[str]:
    return [d.id for d in diagnose(step, call, failing, source="")]


@pytest.mark.parametrize("kind", [FailureKind.TOO_LARGE, FailureKind.TIMEOUT, FailureKind.MEMORY,
                                  FailureKind.CRASH])
def test_a_call_stopped_by_a_limit_does_not_make_np_dot_fixed_rank(kind: FailureKind) -> None:
    call = _limited(weighted_sum__dot_not_batched, kind, over=20_000)
    assert _ids("step4", call, _failing()) == ["dot-not-batched"]


def test_the_learners_own_exception_is_still_evidence() -> None:
    """Code that unpacks a matrix's shape raises on every batch: that is `fixed-rank`."""
    def rows_only(weights: Any, V: Any) -> np.ndarray:
        n_q, n_k = np.shape(weights)
        return np.asarray(weights) @ np.asarray(V)

    assert _ids("step4", rows_only, _failing()) == ["fixed-rank"]


def test_through_the_real_sandbox_an_oversized_np_dot_answer_is_not_fixed_rank(tmp_path: Path) -> None:
    """End to end: the sandbox itself refuses np.dot's answer on the large batch."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "step4_weighted_sum.py").write_text(
        "import numpy as np\n\n\ndef weighted_sum(weights, V):\n    return np.dot(weights, V)\n")
    with Launcher() as launcher:
        learner = Learner(launcher, sub, step_id="step4", module="step4_weighted_sum",
                          function="weighted_sum", params=("weights", "V"), limits=Limits())
        try:
            large = _failing()[-1]
            with pytest.raises(LearnerError) as info:
                learner(*large)
            assert info.value.kind is FailureKind.TOO_LARGE
            assert [d.id for d in diagnose("step4", learner, _failing())] == ["dot-not-batched"]
        finally:
            learner.close()
