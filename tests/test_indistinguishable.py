"""Issue 18 item 2: a graded call looks the same on every path; warm and cold stores grade alike.

Learner code can walk its stack and count its calls. Every call, whether one
of a replayed batch, a single call, a diagnosis probe or a fresh Hypothesis
example, reaches it through the same frames (a one-call batch through the
same `call_many` and the one trampoline, `protocol.invoke`), and a batch runs
in an order drawn from the salt. A cold example store is filled from the
reference before any learner call, so a submission is graded the same way
whether the store was warm or not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner
from attn_practice.grader.sandbox.prefetch import pack_calls

ROOT = Path(__file__).resolve().parents[1]
ATTACK = ROOT / "tests" / "submissions" / "attack_batch_detect"
CLI = Path(sys.executable).with_name("attn-practice")

PROBE = '''
import hashlib
import sys

import numpy as np

COUNT = [0]


def stack(Q, K):
    """The frames below this call (names, files, lines) and their globals, as one number."""
    parts = []
    frame = sys._getframe(1)
    while frame is not None:
        parts.append(f"{frame.f_code.co_name}|{frame.f_code.co_filename}|{frame.f_lineno}|"
                     f"{sorted(frame.f_globals)[:50]}")
        frame = frame.f_back
    digest = hashlib.sha256("\\n".join(parts).encode()).hexdigest()
    return np.array([[float(int(digest[:12], 16)), float(len(parts))]])


def order(Q, K):
    COUNT[0] += 1
    return np.array([[float(COUNT[0])]])
'''


@pytest.fixture(scope="module")
def launcher():
    with Launcher() as la:
        yield la


def _learner(launcher: Launcher, function: str, salt: int = 0) -> Learner:
    learner = Learner(launcher, Path("probe-dir"), step_id="step1", module="probe", function=function,
                      params=("Q", "K"), limits=Limits(call_timeout=5.0, load_timeout=10.0),
                      display_dir="probe-dir", files={"probe.py": PROBE.encode()})
    learner.layout_salt = salt
    return learner


def _args(i: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((1, 2), float(i)), np.full((1, 2), float(i) + 0.5)


def test_a_call_looks_the_same_alone_and_in_a_batch(launcher: Launcher) -> None:
    learner = _learner(launcher, "stack")
    try:
        alone = learner(*_args(0))  # a single call: a fresh example, a diagnosis probe
        calls = [(_args(i), {}, 2) for i in range(8)]
        learner.prefetch(pack_calls(calls))
        batched = [learner.call(*args, expected_size=size).value for args, _, size in calls]
        again = learner(*_args(1))
    finally:
        learner.close()
    assert all(np.array_equal(b, alone) for b in batched), (alone, batched)
    assert np.array_equal(again, alone)


def test_a_batch_runs_in_an_order_drawn_from_the_salt(launcher: Launcher) -> None:
    def order(salt: int) -> list[float]:
        learner = _learner(launcher, "order", salt)
        try:
            calls = [(_args(i), {}, 1) for i in range(12)]
            learner.prefetch(pack_calls(calls, salt))
            return [float(learner.call(*a, expected_size=s).value[0, 0]) for a, _, s in calls]
        finally:
            learner.close()

    first, same, other = order(7), order(7), order(8)
    assert sorted(first) == [float(i) for i in range(1, 13)]
    assert first != sorted(first), "the batch ran in the suite's own order"
    assert first == same and first != other


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k not in ("duration", "seconds")}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _grade(tmp: Path, *folders: Path) -> list[dict]:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), XDG_CACHE_HOME=str(tmp / "cache"),
               ATTN_PRACTICE_SECRET="warm-or-cold")
    env.pop("ATTN_PRACTICE_CACHE", None)
    proc = subprocess.run([str(CLI), "grade", *map(str, folders), "--format", "json", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    return _strip(data if isinstance(data, list) else [data])


def test_warm_and_cold_stores_give_the_same_report(tmp_path: Path) -> None:
    """The stack-walking, call-counting attack graded alone with a cold store, then after a correct
    submission warmed it, then again (the sequence that gave `failed` then `passed` before)."""
    correct = tmp_path / "correct"
    correct.mkdir()
    for name in ("step1_scores.py", "step2_scale.py"):
        (correct / name).write_text((ROOT / "reference" / "attention.py").read_text())
    cold = _grade(tmp_path, ATTACK)
    ok = _grade(tmp_path, correct)
    assert [s["status"] for s in ok[0]["steps"] if s["status"] != "missing"] == ["passed", "passed"]
    assert list((tmp_path / "cache").rglob("examples/*.bin")), "no example store: the next run is not warm"
    warm = _grade(tmp_path, ATTACK)
    assert cold == warm
    assert _grade(tmp_path, ATTACK) == warm
