"""The worked example after a failed check loads the learner's steps into one sandbox (issue 40).

A failed check of step 5 used to start five sandboxes in turn for the panel
beside the report. They now share one (`sandbox.shared`), and the stage the
panel marks as the first to depart is computed again in a sandbox of its
own: what one step's code does to the interpreter they share (NumPy patched
at import) must never change what the panel says about another step. Real
sandboxes; spawns are counted by wrapping the launcher's own `spawn`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import solution_source

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.teaching.worked_example import first_divergence, worked_example_rows

pytestmark = pytest.mark.slow

ROOT = Path("/attn-practice-worked-example")
WRONG_STEP5 = ("import numpy as np\n\n\ndef attention(q, k, v):\n"
               "    return np.zeros((np.asarray(q).shape[0] if np.ndim(q) > 1 else 1, np.shape(v)[-1]))"
               "[0] if np.ndim(q) == 1 else np.zeros((np.shape(q)[0], np.shape(v)[-1]))\n")


def files_of(**changed: str) -> dict[str, bytes]:
    out = {e.file: solution_source(e.id).encode() for e in load_catalog()[:5]}
    for step, text in changed.items():
        out[next(e.file for e in load_catalog()[:5] if e.id == step)] = text.encode()
    return out


@pytest.fixture
def launcher():
    la = Launcher()
    spawns: list[str] = []
    real = la.spawn

    def counted(*args, **kw):
        spawns.append(kw.get("module", ""))
        return real(*args, **kw)

    la.spawn = counted  # type: ignore[method-assign]
    la.spawns = spawns  # type: ignore[attr-defined]
    try:
        yield la
    finally:
        la.close()


def values(rows):
    return [(r.stage, r.ok, r.problem, r.first_divergence, r.inherited,
             None if r.got is None else np.round(r.got, 6).tolist()) for r in rows]


def test_a_wrong_step5_costs_one_shared_sandbox_and_one_to_confirm_not_five(launcher):
    files = files_of(step5=WRONG_STEP5)
    rows = worked_example_rows(ROOT, launcher, files=files)
    assert len(launcher.spawns) == 2, launcher.spawns  # the five steps in one; step 5 again alone
    assert first_divergence(rows) == "attention"
    assert all(r.ok for r in rows[:4]) and not rows[4].ok
    launcher.spawns.clear()
    alone = worked_example_rows(ROOT, launcher, files=files, shared=False)
    assert len(launcher.spawns) == 5
    assert values(rows) == values(alone)


def test_numpy_patched_by_one_step_never_changes_what_the_panel_says_of_another(launcher):
    """Step 1's file replaces np.exp at import. In a shared sandbox step 3's softmax would use it
    (and look wrong); the panel must say what a sandbox of its own says: step 3 is right."""
    patched = solution_source("step1") + "\nnp.exp = lambda x: np.zeros_like(np.asarray(x, dtype=float)) + 1.0\n"
    files = files_of(step1=patched, step5=WRONG_STEP5)
    rows = worked_example_rows(ROOT, launcher, files=files)
    alone = worked_example_rows(ROOT, launcher, files=files, shared=False)
    assert values(rows) == values(alone)
    by_stage = {r.stage: r for r in rows}
    assert by_stage["weights"].ok, "step 3 was judged in the sandbox step 1 had patched"
    assert first_divergence(rows) == "attention"


def test_a_step_that_kills_the_shared_sandbox_costs_only_itself(launcher):
    """Step 2 ends its process when called: the steps after it go on in sandboxes of their own."""
    dying = ("import os\n\n\ndef scale_scores(scores, d_k):\n    os._exit(3)\n")
    files = files_of(step2=dying)
    rows = worked_example_rows(ROOT, launcher, files=files)
    alone = worked_example_rows(ROOT, launcher, files=files, shared=False)
    assert values(rows) == values(alone)
    by_stage = {r.stage: r for r in rows}
    assert by_stage["scores"].ok and by_stage["scaled"].got is None
    assert first_divergence(rows) == "scaled"


def test_a_first_departure_at_the_step_the_check_failed_alone_needs_no_second_sandbox(launcher):
    """The check itself failed step 5 in a sandbox of its own: the panel marking step 5 as the
    first to depart needs no confirming run (one sandbox in all, not two)."""
    files = files_of(step5=WRONG_STEP5)
    rows = worked_example_rows(ROOT, launcher, files=files, failed_alone=frozenset({"step5"}))
    assert len(launcher.spawns) == 1, launcher.spawns
    assert first_divergence(rows) == "attention"
    launcher.spawns.clear()
    patched = solution_source("step1") + "\nnp.exp = lambda x: np.zeros_like(np.asarray(x, dtype=float)) + 1.0\n"
    rows = worked_example_rows(ROOT, launcher, files=files_of(step1=patched, step5=WRONG_STEP5),
                               failed_alone=frozenset({"step5"}))
    assert first_divergence(rows) == "attention"  # step 3 was confirmed alone, and is right
    assert len(launcher.spawns) >= 2
