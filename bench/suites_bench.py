"""The hidden suites' cost: this checkout against a baseline commit, as ratios of CPU time.

    python bench/suites_bench.py                  # baseline: the commit before the suites' rework
    python bench/suites_bench.py --baseline REV --runs 5

Grades one correct eight-step submission (the reference in every file) and
one with a wrong step 3, with `attn-practice grade` under a secret, first
with a cold example store, then warm `--runs` times. CPU seconds (user + sys
of the grader and everything it starts) are measured rather than wall time,
so a busy machine changes the figures little; the ratio new/baseline is what
counts (the brief: keep the suite's time within today's budget). The baseline
runs from `git archive REV` on PYTHONPATH with this venv's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention",
         "step6_masked", "step7_self_attention", "step8_multi_head"]
BASELINE = "90fe426"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _grade(folder: Path, env: dict[str, str]) -> tuple[float, dict]:
    before = _children_cpu()
    proc = subprocess.run([sys.executable, "-m", "attn_practice", "grade", str(folder), "--format", "json",
                           "--no-cache"], capture_output=True, text=True, env=env, check=False, cwd="/")
    spent = _children_cpu() - before
    if proc.returncode not in (0, 1):
        raise SystemExit(f"grade failed: {proc.stderr[-2000:]}")
    return spent, json.loads(proc.stdout)


def _measure(label: str, pythonpath: str | None, subs: dict[str, Path], tmp: Path, runs: int) -> dict[str, dict]:
    env = dict(os.environ, ATTN_PRACTICE_SECRET="bench-secret", PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(tmp / f"cache-{label}"), XDG_DATA_HOME=str(tmp / f"data-{label}"))
    env.pop("ATTN_PRACTICE_CACHE", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = {}
    for name, folder in subs.items():
        cold, report = _grade(folder, env)
        warm = [_grade(folder, env)[0] for _ in range(runs)]
        tests = sum(len(s["tests"]) for s in report["steps"])
        out[name] = {"cold": cold, "warm": statistics.median(warm), "score": report["score"], "tests": tests}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        subs = {"correct": tmp / "correct", "wrong-step3": tmp / "wrong"}
        for folder in subs.values():
            folder.mkdir()
            for stem in STEPS:
                shutil.copy(ROOT / "reference" / "attention.py", folder / f"{stem}.py")
        shutil.copy(ROOT / "tests" / "implementations" / "step3" / "wrong_softmax_global.py",
                    subs["wrong-step3"] / "step3_softmax.py")
        base = tmp / "base" / "attn_practice"
        base.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        old = _measure("baseline", str(base.parent), subs, tmp, args.runs)
        new = _measure("new", None, subs, tmp, args.runs)
    for name in subs:
        o, n = old[name], new[name]
        print(f"{name}: tests {o['tests']} -> {n['tests']}; CPU cold {o['cold']:.2f} -> {n['cold']:.2f} s "
              f"(x{n['cold'] / o['cold']:.2f}); warm {o['warm']:.2f} -> {n['warm']:.2f} s "
              f"(x{n['warm'] / o['warm']:.2f}); score {o['score']} / {n['score']}")


if __name__ == "__main__":
    main()
