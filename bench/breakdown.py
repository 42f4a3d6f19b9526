"""Where a submission's machine time goes: one warm engine, phases timed by wrapping them.

    python bench/breakdown.py SUBMISSION...      # prints one JSON object
    python bench/breakdown.py SUBMISSION... --out bench/breakdown.json

Side by side (issue 40): "batch", a batch worker grading each submission's
steps at once, and "hosted_check", a hosted check worker (`host`'s engine:
`checks.work.check_files`) checking each core step of the same submissions
one check at a time, as learners press Check; its extra phase "teaching"
is the worked example a check shows. Per submission for the batch, per
check for the host, and the batch's per-step share beside it.

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

from attn_practice.grader.catalog import load_catalog
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
#: the hosted side checks each core step of the first this many submissions
HOSTED_SUBMISSIONS = 10
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
    out_path = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    subs = [Path(a) for a in argv if a not in ("--fresh-session", "--out") and Path(a) != out_path]
    instrument()
    batch = batch_figures(subs, fresh)
    hosted = hosted_figures(subs)
    steps = 5
    out = {"batch": batch, "hosted_check": hosted,
           "batch_machine_ms_per_step": round(batch.get("machine_ms_per_unit", 0.0) / steps, 2),
           "hosted_over_batch_step": round(hosted.get("machine_ms_per_unit", 0.0)
                                           / max(batch.get("machine_ms_per_unit", 0.0) / steps, 1e-9), 2),
           "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    if out_path is not None:
        out_path.write_text(json.dumps(out, indent=2) + "\n")
    return out


def batch_figures(subs: list[Path], fresh: bool) -> dict[str, Any]:
    course = default_course()
    options = options_for(course)
    with (Engine(options) if fresh else batch_engine(options)) as eng:
        for s in subs[:2]:  # warm: first calls import and record
            grade_with(eng, s, step_ids_for(course, s), label=str(s))
        reports: list[Any] = []
        units = [lambda s=s: reports.append(grade_with(eng, s, step_ids_for(course, s), label=str(s)))
                 for s in subs]
        return measure(eng, units, lambda: (render(reports, "csv"), render(reports, "json")),
                       "submission")


def hosted_figures(subs: list[Path]) -> dict[str, Any]:
    from attn_practice.grader.host.checks import work
    from attn_practice.grader.teaching import worked_example

    worked_example.rows_after_check = _timed("teaching", worked_example.rows_after_check)
    work.init_worker(work.host_options())
    eng = work.engine()
    core = [e for e in load_catalog() if not e.bonus]
    checks = []
    for s in subs[:HOSTED_SUBMISSIONS]:
        files = {e.file: (s / e.file).read_text() for e in core if (s / e.file).exists()}
        checks += [(e.id, files) for e in core]
    for step, files in checks[:5]:  # warm
        work.check_files(step, files)
    results: list[Any] = []
    units = [lambda c=c: results.append(work.check_files(*c)) for c in checks]
    try:
        return measure(eng, units, lambda: [json.dumps(r) for r in results], "check")
    finally:
        eng.close()


def measure(eng: Engine, units: list[Any], report: Any, unit: str) -> dict[str, Any]:
    """Run `units` (one graded unit each) on `eng`, then `report`; the phases per unit."""
    SPENT.clear()
    pid = eng.launcher.pid
    before = _sandbox_cpu(pid)
    t0 = time.perf_counter()
    c0 = _cpu(resource.getrusage(resource.RUSAGE_SELF))
    for run in units:
        run()
    t_report = time.perf_counter()
    report()
    SPENT["reporting"] = time.perf_counter() - t_report
    wall = t_report - t0
    grader_cpu = _cpu(resource.getrusage(resource.RUSAGE_SELF)) - c0
    after = _sandbox_cpu(eng.launcher.pid) if eng.launcher.pid == pid else None
    n = len(units)
    tests = SPENT["tests"]
    learner = SPENT["learner"]
    phases = {
        "setup (sandboxes: spawn, import, reap)": SPENT["setup"],
        "learner code (waiting on sandbox answers)": learner,
        "expected values (reference)": SPENT["expected"],
        "checking (replay, assertions)": max(tests - SPENT["expected"] - learner, 0.0),
        "pytest (config, collection, protocol)": SPENT["suites"] - tests,
        "teaching (worked example of a check)": SPENT["teaching"],
        "reporting (json + csv)": SPENT["reporting"],
    }
    phases["other"] = max(wall + SPENT["reporting"] - sum(phases.values()), 0.0)
    out: dict[str, Any] = {
        "unit": unit, "n": n,
        "wall_ms_per_unit": 1000 * (wall + SPENT["reporting"]) / n,
        "grader_cpu_ms_per_unit": 1000 * grader_cpu / n,
        "phases_ms_per_unit": {k: round(1000 * v / n, 2) for k, v in phases.items()},
    }
    if after is not None and before is not None:
        out["sandbox_cpu_ms_per_unit"] = 1000 * (after - before) / n
        out["machine_ms_per_unit"] = out["grader_cpu_ms_per_unit"] + out["sandbox_cpu_ms_per_unit"]
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
