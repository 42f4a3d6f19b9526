"""Issue 20 item 5: of all failing tests of a step, the one that failed on the smallest input comes first.

Sizes are read back from what the report shows (the `name: shape (...)` lines
of a failure's details), in `check`'s engine (shrinking, public examples),
in grade's order without the echo cap, and in `grade --format json` from the
console script, where only that first failure carries its input.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import Status

CLI = Path(sys.executable).with_name("attn-practice")
SHAPE = re.compile(r"^(\w+): shape \(([\d, ]*)\)", re.MULTILINE)

#: Wrong only from 4 elements up: the suite's first tests fail on 15-element inputs,
#: later ones (and shrunk examples) on 4 or 5 elements.
BIG_ONLY = '''
import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    out = e / e.sum(axis=axis, keepdims=True)
    return out if x.size < 4 else np.full_like(out, 1.0 / x.shape[axis])
'''


def _size(details: str) -> tuple[int, int] | None:
    shapes = [tuple(int(n) for n in s.replace(" ", "").split(",") if n) for _, s in SHAPE.findall(details)]
    if not shapes:
        return None
    elements = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        elements += n
    return elements, max(len(s) for s in shapes)


def _folder(tmp: Path) -> Path:
    sub = tmp / "sub"
    sub.mkdir(parents=True)
    (sub / "step3_softmax.py").write_text(BIG_ONLY, encoding="utf-8")
    return sub


@pytest.mark.parametrize("shrink", [True, False], ids=["check", "grade-order"])
def test_the_first_failure_is_the_smallest(tmp_path: Path, shrink: bool) -> None:
    with Engine(RunOptions(shrink=shrink, persist_examples=False)) as engine:
        step = engine.grade(_folder(tmp_path), [resolve_step("step3")]).steps[0]
    failed = [t for t in step.tests if t.status is Status.FAILED and t.failure is not None]
    assert len(failed) >= 3
    sizes = [_size(t.failure.details) for t in failed]
    assert all(s is not None for s in sizes), [t.failure.details for t in failed]
    assert sizes[0] == min(sizes), sizes
    # the suite's own first failing test fails on a 15-element input: it was moved down
    assert sizes[0][0] <= 5
    assert len(failed[0].failure.repro) < 120


def test_grade_reports_the_smallest_failing_input_first(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               ATTN_PRACTICE_SECRET="order-secret")
    env.pop("ATTN_PRACTICE_CACHE", None)
    proc = subprocess.run([str(CLI), "grade", str(_folder(tmp_path)), "--format", "json", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    step = next(s for s in json.loads(proc.stdout)["steps"] if s["id"] == "step3")
    failed = [t for t in step["tests"] if t["status"] == "failed"]
    assert len(failed) >= 3
    with Engine(RunOptions(shrink=False, persist_examples=False, secret="order-secret")) as engine:
        inner = engine.grade(_folder(tmp_path / "again"), [resolve_step("step3")]).steps[0]
    first = next(t for t in inner.tests if t.status is Status.FAILED)
    assert first.name == failed[0]["name"]
    assert _size(first.failure.details)[0] <= 5
