"""Speed measurements, each reported as a ratio against a floor measured in the same run.

    python bench/run.py            # everything (takes a few minutes)
    python bench/run.py --quick    # fewer repetitions, a batch of 20

Targets (from the issues): `check stepN` on a correct solution <= 1.0 s median and
<= 2.5x the floor `python -c "import numpy, pytest, hypothesis"`; `--help` <= 0.3 s;
grading one correct five-step submission <= 2.0 s median; a batch of 100 mixed
submissions >= 4/s on 2 cores (aim 10), reported against plain pytest per submission;
peak memory of the trusted process < 300 MiB. Results go to bench/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One definition of the anchor's pytest flags, the five steps and the console script, shared
# with side_by_side.py (beside this file, so on sys.path when either runs as a script).
from side_by_side import PLAIN, STEPS, cli

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def timed(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def median_of(n: int, cmd: list[str], **kw) -> float:
    return statistics.median(timed(cmd, **kw) for _ in range(n))


def write_correct(folder: Path) -> None:
    source = (ROOT / "reference" / "attention.py").read_text()
    folder.mkdir(parents=True, exist_ok=True)
    for stem in STEPS:
        (folder / f"{stem}.py").write_text(source)


def write_mixed(folder: Path, rng: random.Random) -> None:
    """A plausible student: most steps right, sometimes one labelled mistake."""
    write_correct(folder)
    if rng.random() < 0.5:
        n = rng.randint(1, 5)
        wrong = sorted((ROOT / "tests" / "implementations" / f"step{n}").glob("wrong_*.py"))
        if wrong:
            shutil.copy(rng.choice(wrong), folder / f"{STEPS[n - 1]}.py")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    batch_n = 20 if args.quick else 100
    out: dict = {}
    tmp = Path(tempfile.mkdtemp(prefix="attnp-bench-"))
    try:
        floor = median_of(reps, [sys.executable, "-c", "import numpy, pytest, hypothesis"])
        out["floor_import_s"] = floor
        out["help_s"] = median_of(reps, cli() + ["--help"])
        ws = tmp / "ws"
        subprocess.run(cli() + ["start", str(ws)], stdout=subprocess.DEVNULL, check=True)
        write_correct(ws)
        checks = {}
        for n in range(1, 6):
            checks[f"step{n}"] = median_of(reps, cli() + ["check", f"step{n}"], cwd=ws)
        out["check_s"] = checks
        out["check_ratio_to_floor"] = {k: v / floor for k, v in checks.items()}
        one = tmp / "one"
        write_correct(one)
        out["grade_one_s"] = median_of(reps, cli() + ["grade", str(one), "--format", "json", "--no-cache"])
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run(cli() + ["grade", str(one), "--format", "json", "--no-cache", "--jobs", "1"],
                       stdout=subprocess.DEVNULL)
        out["peak_rss_mib"] = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        rng = random.Random(7)
        subs = []
        for i in range(batch_n):
            d = tmp / "class" / f"s{i:03d}"
            write_mixed(d, rng)
            subs.append(str(d))
        # One-time cost per machine and grader version: recording the suites' examples
        # (`grade` does it itself before a batch; timed apart so the rate is steady-state).
        cache_env = dict(os.environ, ATTN_PRACTICE_CACHE=str(tmp / "cache" / "results"))
        warm = timed([sys.executable, "-m", "attn_practice.grader.engine.warm"], env=cache_env)
        t = timed(cli() + ["grade", *subs, "--format", "csv", "--no-cache", "--jobs", "2"], env=cache_env)
        out["batch"] = {"n": batch_n, "seconds": t, "per_s": batch_n / t, "one_time_warm_s": warm}
        base_n = min(batch_n, 10)
        env = dict(os.environ)
        t0 = time.perf_counter()
        for d in subs[:base_n]:
            env["SUBMISSION"] = d
            subprocess.run([sys.executable, "-m", "pytest", "-q", *PLAIN,
                            str(HERE / "baseline_test.py")], env=env, cwd=tmp,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base_rate = base_n / (time.perf_counter() - t0)
        out["batch"]["plain_pytest_per_s"] = base_rate
        out["batch"]["ratio_to_plain_pytest"] = out["batch"]["per_s"] / base_rate
        # diagnosis of failing steps, the grader's own share (bench/diagnose_bench.py)
        diag = subprocess.run([sys.executable, str(HERE / "diagnose_bench.py")], capture_output=True,
                              text=True, cwd=ROOT)
        out["diagnosis"] = json.loads(diag.stdout) if diag.returncode == 0 else {"error": diag.stderr[-500:]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (HERE / "results.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
