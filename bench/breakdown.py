"""Where a submission's machine time goes: one warm engine, phases timed by wrapping them.

    python bench/breakdown.py SUBMISSION...      # prints one JSON object

Grades the submissions one after another on one `Engine` (what a batch
worker does) and splits the wall time per submission into: set-up (spawning,
importing and reaping sandboxes), learner code (waiting on the sandboxes'
answers), expected values (the reference), checking (replay and assertions,
the grader's side of each test), pytest (its configuration, collection and
per-test protocol), reporting (the report's JSON and CSV), and the rest.
Also the sandboxes' own CPU time (the fork server and its children), so the
machine time per submission is `wall + sandbox CPU` on a quiet machine.
Timing by wrapping costs a little: compare runs of this script, not its
total with `grade`'s.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from attn_practice.grader.course import default_course
from attn_practice.grader.engine import engine as engine_mod
from attn_practice.grader.engine.engine import Engine
from attn_practice.grader.engine.replay import ExampleReplay
from attn_practice.grader.engine.session import SuiteRunner
from attn_practice.grader.reports.output import render
from attn_practice.grader.sandbox import launcher as launcher_mod
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.sandbox.learner import Learner
from attn_practice.grader.staff.batch import batch_engine, grade_with, options_for, step_ids_for
from attn_practice.reference import attention as reference

SPENT: dict[str, float] = defaultdict(float)
_DEPTH: dict[str, int] = defaultdict(int)


def _timed(phase: str, fn: Any, unless: str = "") -> Any:
    """`fn`, its wall time added to `phase` (outermost call only, so recursion counts once).

    `unless`: not while inside that phase (waiting for an import is set-up).
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if unless and _DEPTH[unless]:
            return fn(*args, **kwargs)
        _DEPTH[phase] += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _DEPTH[phase] -= 1
            if _DEPTH[phase] == 0:
                SPENT[phase] += time.perf_counter() - t0

    return wrapper


def instrument() -> None:
    Launcher.spawn = _timed("setup", Launcher.spawn)
    Learner.load = _timed("setup", Learner.load)
    engine_mod.close_learners = _timed("setup", engine_mod.close_learners)
    launcher_mod.protocol.recv = _timed("learner", launcher_mod.protocol.recv, unless="setup")
    SuiteRunner.run = _timed("suites", SuiteRunner.run)
    ExampleReplay.run = _timed("tests", ExampleReplay.run)
    ExampleReplay.run_plain = _timed("tests", ExampleReplay.run_plain)
    for name, fn in list(reference.FUNCTIONS.items()):
        reference.FUNCTIONS[name] = _timed("expected", fn)


def _cpu(ru: Any) -> float:
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str]) -> dict[str, Any]:
    fresh = "--fresh-session" in argv  # pytest started per submission, as before sessions were reused
    subs = [Path(a) for a in argv if a != "--fresh-session"]
    course = default_course()
    options = options_for(course)
    instrument()
    with (Engine(options) if fresh else batch_engine(options)) as eng:
        for s in subs[:2]:  # warm: first calls import and record
            grade_with(eng, s, step_ids_for(course, s), label=str(s))
        SPENT.clear()
        pid = eng.launcher.pid
        before = _sandbox_cpu(pid)
        t0 = time.perf_counter()
        c0 = _cpu(resource.getrusage(resource.RUSAGE_SELF))
        reports = []
        for s in subs:
            # The learner's wait is inside set-up (imports) and tests (calls): split it out.
            reports.append(grade_with(eng, s, step_ids_for(course, s), label=str(s)))
        t_report = time.perf_counter()
        render(reports, "csv")
        render(reports, "json")
        SPENT["reporting"] = time.perf_counter() - t_report
        wall = t_report - t0
        grader_cpu = _cpu(resource.getrusage(resource.RUSAGE_SELF)) - c0
        after = _sandbox_cpu(eng.launcher.pid) if eng.launcher.pid == pid else None
    n = len(subs)
    tests = SPENT["tests"]
    pytest_only = SPENT["suites"] - tests
    learner = SPENT["learner"]
    phases = {
        "setup (sandboxes: spawn, import, reap)": SPENT["setup"],
        "learner code (waiting on sandbox answers)": learner,
        "expected values (reference)": SPENT["expected"],
        "checking (replay, assertions)": max(tests - SPENT["expected"] - learner, 0.0),
        "pytest (config, collection, protocol)": pytest_only,
        "reporting (json + csv)": SPENT["reporting"],
    }
    phases["other"] = max(wall + SPENT["reporting"] - sum(phases.values()), 0.0)
    out: dict[str, Any] = {
        "n": n,
        "wall_ms_per_submission": 1000 * (wall + SPENT["reporting"]) / n,
        "grader_cpu_ms_per_submission": 1000 * grader_cpu / n,
        "phases_ms_per_submission": {k: round(1000 * v / n, 2) for k, v in phases.items()},
    }
    if after is not None and before is not None:
        out["sandbox_cpu_ms_per_submission"] = 1000 * (after - before) / n
        out["machine_ms_per_submission"] = out["grader_cpu_ms_per_submission"] + out["sandbox_cpu_ms_per_submission"]
    return out


def _sandbox_cpu(pid: int | None) -> float | None:
    """CPU seconds of the fork server and its reaped children, from /proc/PID/stat."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    tick = 100.0
    try:
        import os

        tick = float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError):
        pass
    # utime stime cutime cstime are fields 14-17 (1-based) of stat; after ")" they are 12-15.
    return sum(int(x) for x in fields[11:15]) / tick


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=2))
