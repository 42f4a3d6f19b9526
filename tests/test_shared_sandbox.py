"""One sandbox per submission (`grade`): every step's own report, in one confined process.

`grade` loads all of a submission's steps into one sandbox and grades a
step that does not pass there again in a sandbox of its own (see
`grader/sandbox/shared.py`). What must hold:

- a submission whose steps pass is served by one process, and each step
  imports the learner's files afresh (as in a sandbox of its own);
- every report is the one a sandbox per step gives: failures, their inputs
  and messages, diagnoses, printed output (durations aside);
- one step's code never costs another step points: NumPy patched at import,
  a crash, a timeout, a thread that kills the process later.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport, Status, without_timings
from attn_practice.grader.sandbox.launcher import Launcher, Limits

sys.path.insert(0, str(Path(__file__).parent))
from conftest import CORE, run_script, solution_source  # noqa: E402

IMPL = Path(__file__).parent / "implementations"
SECRET = "shared-sandbox-test"
STEPS = [resolve_step(s) for s in CORE]


def write_submission(folder: Path, overrides: dict[str, str] | None = None, *,
                     imports: bool = False) -> Path:
    """The five core steps right (self-contained unless `imports`), with `overrides` (step -> source)."""
    folder.mkdir(parents=True, exist_ok=True)
    for ex in STEPS:
        source = (overrides or {}).get(ex.id) or solution_source(ex.id, imports=imports)
        (folder / ex.file).write_text(source)
    return folder


@pytest.fixture(scope="module")
def engines() -> Any:
    """A grading engine that shares a sandbox per submission, and one that never does."""
    limits = Limits(call_timeout=1.0)
    with Engine(RunOptions(secret=SECRET, shrink=False, limits=limits)) as shared, \
            Engine(RunOptions(secret=SECRET, shrink=False, limits=limits, shared_sandbox=False)) as alone:
        yield shared, alone


def both(engines: Any, folder: Path) -> tuple[GradeReport, GradeReport]:
    shared, alone = engines
    return (shared.grade(folder, STEPS, label="sub"), alone.grade(folder, STEPS, label="sub"))


def statuses(report: GradeReport) -> dict[str, Status]:
    return {s.id: s.status for s in report.steps}


# -- the same reports --------------------------------------------------------------
WRONG = sorted(p for s in CORE for p in sorted((IMPL / s).glob("wrong_*.py"))[:2])


@pytest.mark.parametrize("wrong", WRONG, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_a_wrong_step_gets_the_report_a_sandbox_of_its_own_gives(engines: Any, tmp_path: Path,
                                                                  wrong: Path) -> None:
    step = wrong.parent.name
    folder = write_submission(tmp_path / "sub", {step: wrong.read_text()}, imports=True)
    shared, alone = both(engines, folder)
    assert statuses(shared)[step] is not Status.PASSED
    assert without_timings(shared.to_dict()) == without_timings(alone.to_dict())


def test_an_import_error_and_a_missing_function_are_reported_as_alone(engines: Any, tmp_path: Path) -> None:
    folder = write_submission(tmp_path / "sub", {
        "step2": "import numpy as np\n\ndef scale_scores(scores, d_k)\n    return scores\n",
        "step4": "import numpy as np\n\ndef weighted(weights, V):\n    return weights @ V\n",
    })
    shared, alone = both(engines, folder)
    assert statuses(shared) == {"step1": Status.PASSED, "step2": Status.ERROR, "step3": Status.PASSED,
                                "step4": Status.ERROR, "step5": Status.PASSED}
    assert without_timings(shared.to_dict()) == without_timings(alone.to_dict())


# -- one step's code never costs another points ----------------------------------------
def test_numpy_patched_by_one_step_does_not_fail_another(engines: Any, tmp_path: Path) -> None:
    # step1 breaks np.exp for everyone in its interpreter; step3 and step5 use np.exp.
    step1 = solution_source("step1", imports=False) + "\nnp.exp = lambda x, *a, **k: np.zeros_like(x)\n"
    folder = write_submission(tmp_path / "sub", {"step1": step1})
    shared, alone = both(engines, folder)
    assert all(s is Status.PASSED for s in statuses(shared).values()), statuses(shared)
    assert without_timings(shared.to_dict()) == without_timings(alone.to_dict())


@pytest.mark.parametrize("step, source, status", [
    ("step2", "import os\n\ndef scale_scores(scores, d_k):\n    os._exit(3)\n", Status.ERROR),  # a crash
    ("step3", "def softmax(x, axis=-1):\n    while True:\n        pass\n", Status.TIMEOUT),
], ids=["crash", "timeout"])
def test_a_crash_or_a_timeout_in_one_step_fails_that_step_only(engines: Any, tmp_path: Path, step: str,
                                                               source: str, status: Status) -> None:
    folder = write_submission(tmp_path / "sub", {step: source})
    shared, alone = both(engines, folder)
    assert statuses(shared) == {**dict.fromkeys(CORE, Status.PASSED), step: status}
    assert without_timings(shared.to_dict()) == without_timings(alone.to_dict())


def test_a_process_killed_later_by_another_steps_thread_costs_no_points(engines: Any, tmp_path: Path) -> None:
    # step1 leaves a mark in the interpreter; step5, finding it (only when it shares step1's
    # process), starts a thread that ends the process while other steps are being tested.
    step1 = solution_source("step1", imports=False) + "\nimport builtins\nbuiltins._step1_was_here = True\n"
    step5 = solution_source("step5", imports=False) + (
        "\nimport builtins, os, threading, time\n"
        "if getattr(builtins, '_step1_was_here', False):\n"
        "    threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0)), daemon=True).start()\n")
    folder = write_submission(tmp_path / "sub", {"step1": step1, "step5": step5})
    shared, alone = both(engines, folder)
    assert all(s is Status.PASSED for s in statuses(shared).values()), statuses(shared)
    assert statuses(alone) == statuses(shared)


# -- one process, fresh imports ----------------------------------------------------------
def test_a_passing_submission_is_served_by_one_process_that_imports_each_step_afresh(tmp_path: Path) -> None:
    """Through the console script: every step prints its process at import, and step5
    (which imports steps 1-4, as the README suggests) imports each of them again."""
    overrides = {ex.id: solution_source(ex.id, imports=True)
                 + f"\nimport os\nprint('{ex.id} imported in', os.getpid())\n" for ex in STEPS}
    folder = write_submission(tmp_path / "sub", overrides)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    res = run_script(["grade", str(folder), "--format", "json", "--no-cache"], tmp_path, env=env)
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    report = data if "steps" in data else data["submissions"][0]
    steps = {s["id"]: s for s in report["steps"]}
    assert all(s["status"] == "passed" for s in steps.values()), steps
    pids = {line.split()[-1] for s in steps.values() for line in s["output"].splitlines()
            if " imported in " in line}
    assert len(pids) == 1, steps  # one sandbox process served every step
    step5 = steps["step5"]["output"]
    for ex in STEPS:
        assert f"{ex.id} imported in" in step5  # step5's own import ran steps 1-4's files again


def test_a_step_that_never_ran_in_the_shared_sandbox_is_not_graded_twice(engines: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step loops forever: step1's timeout ends the shared sandbox, so steps 2-5 run (and
    time out) in sandboxes of their own, whose reports stand: they are not graded again."""
    loop = "def {fn}(*args, **kwargs):\n    while True:\n        pass\n"
    folder = write_submission(tmp_path / "sub", {ex.id: loop.format(fn=ex.function) for ex in STEPS})
    spawned: list[str] = []
    real_spawn = Launcher.spawn

    def spawn(self: Any, *args: Any, **kwargs: Any) -> Any:
        spawned.append(kwargs["module"])
        return real_spawn(self, *args, **kwargs)

    monkeypatch.setattr(Launcher, "spawn", spawn)
    shared_engine, alone_engine = engines
    shared = shared_engine.grade(folder, STEPS, label="sub")
    in_shared, spawned[:] = list(spawned), []
    alone = alone_engine.grade(folder, STEPS, label="sub")
    assert set(statuses(shared).values()) == {Status.TIMEOUT}
    assert without_timings(shared.to_dict()) == without_timings(alone.to_dict())
    for ex in STEPS[1:]:  # as many sandboxes as when every step has its own from the start
        assert in_shared.count(ex.module) == spawned.count(ex.module), (in_shared, spawned)
