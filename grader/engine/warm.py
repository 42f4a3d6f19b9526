"""Fill the example store ahead of time: every hidden suite recorded against the reference.

Its own module because it needs both the engine (to run the suites) and the
replay (to store what they drew), which must not import each other. Batch
grading calls `warm` before starting its workers, so each replays instead
of running Hypothesis. `python -m attn_practice.grader.engine.warm` does it
by hand: the public examples `check` uses, and those `grade` draws from this
installation's secret (or $ATTN_PRACTICE_SECRET).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.engine.engine import RunOptions, run_suites
from attn_practice.grader.engine.hypothesis_setup import configure_hypothesis
from attn_practice.grader.engine.replay import ExampleReplay, store_path
from attn_practice.grader.suites.assertions import StepContext
from attn_practice.reference import attention


def warm(max_examples: int | None = None, step_ids: Sequence[str] | None = None, *,
         secret: str | None = None) -> Path | None:
    """Record every hidden suite's examples (drawn from `secret`) against the reference and store them."""
    n = max_examples or RunOptions().max_examples
    replay = ExampleReplay(store_path(secret), secret=secret)
    if n in replay.complete:
        return replay.store
    configure_hypothesis(n)
    exercises = [e for e in load_catalog() if step_ids is None or e.id in step_ids]
    # In collect mode every call is answered by the reference, i.e. as a correct
    # solution would answer: exactly the examples a passing submission sees.
    contexts = {e.id: StepContext(e, None, attention.FUNCTIONS[e.function], collecting=[])  # type: ignore[arg-type]
                for e in exercises}
    run_suites(contexts, (), replay)
    if step_ids is None:
        replay.complete.add(n)
    replay.save()
    return replay.store


if __name__ == "__main__":
    from attn_practice.grader.engine.secret import grading_secret

    warm()  # check's public examples
    warm(secret=grading_secret())  # grade's, under the default course's secret
