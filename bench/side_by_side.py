"""Issue 22's side-by-side, in one run: every figure a ratio to an anchor measured alongside it.

    python bench/side_by_side.py                 # the issue's sizes (200 submissions; minutes)
    python bench/side_by_side.py --quick         # 40 submissions, fewer repetitions
    python bench/side_by_side.py --dask          # also `--dask local` beside each class run
    python bench/side_by_side.py --memory 5000   # also the parent's peak RSS on a 5,000 class
    python bench/side_by_side.py --repeat 3      # three class runs, the median ratio

Anchors: the import floor `python -c "import numpy, pytest, hypothesis"`, and
plain pytest on a two-function assignment (`anchor_test.py`), one run per
submission, two at a time, measured before and after each class run (the
class's ratio is to their mean: a shared machine's speed drifts), the
median over `--repeat` runs (with `--dask`, the class is also graded on a
LocalCluster in each stretch, before or after the pool in turn, and its ratio
is to that pool run). Measured: `grade` of the class (half of it wrong,
five steps each) with `--jobs 2 --no-cache`; one grade; `check step3`; a
`check` on an endless loop (fast stops, as a ratio to the call timeout);
where a submission's machine time goes (`breakdown.py`). Goals (issue 22):
class >= 10x plain pytest x2, one grade <= 0.5x plain pytest, check <= 1.25x
the floor, `--dask local` >= 0.9x the local pool, parent < 1 GiB at 5,000.
Results also go to bench/side_by_side.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STEPS = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
GOALS = {"class_ratio_to_plain_pytest_x2": 10.0, "grade_one_ratio_to_plain_pytest": 0.5,
         "check_ratio_to_floor": 1.25, "dask_local_ratio_to_pool": 0.9}


#: plain pytest: the repository's own settings (pyproject's addopts start three xdist workers
#: for the suite) must not reach the anchor, which would then time xdist's start-up
PLAIN = ("-c", os.devnull, "-p", "no:cacheprovider", "-p", "no:xdist")


def cli() -> list[str]:
    beside = Path(sys.executable).parent / "attn-practice"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "attn_practice"]


def timed(cmd: list[str], **kw: Any) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def median_of(n: int, cmd: list[str], **kw: Any) -> float:
    return statistics.median(timed(cmd, **kw) for _ in range(n))


def write_submission(folder: Path, wrong: Path | None) -> None:
    source = (ROOT / "reference" / "attention.py").read_text()
    folder.mkdir(parents=True, exist_ok=True)
    for stem in STEPS:
        (folder / f"{stem}.py").write_text(source)
    if wrong is not None:
        step = int(wrong.parent.name.removeprefix("step"))
        shutil.copy(wrong, folder / f"{STEPS[step - 1]}.py")


def make_class(root: Path, n: int, seed: int = 22) -> list[str]:
    """`n` five-step submissions, every other one with a labelled mistake in one step."""
    rng = random.Random(seed)
    wrong = [p for s in range(1, 6) for p in sorted((ROOT / "tests" / "implementations" / f"step{s}")
                                                   .glob("wrong_*.py"))]
    out = []
    for i in range(n):
        d = root / f"s{i:05d}"
        write_submission(d, rng.choice(wrong) if i % 2 else None)
        out.append(str(d))
    return out


def peak_rss_run(cmd: list[str], **kw: Any) -> tuple[float, float]:
    """(seconds, the process's own peak resident MiB), read from /proc while it runs."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            try:
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.2)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    proc.wait()
    t.join()
    return time.perf_counter() - t0, peak[0] / 1024


def plain_pytest_pair_rate(subs: list[str], cwd: Path) -> float:
    """Submissions per second for plain pytest, one process per submission, two at a time."""
    def one(sub: str) -> None:
        subprocess.run([sys.executable, "-m", "pytest", "-q", *PLAIN, str(HERE / "anchor_test.py")],
                       env=dict(os.environ, SUBMISSION=sub), cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, subs))
    return len(subs) / (time.perf_counter() - t0)


def _without_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if k not in ("duration", "execution_time")}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


def grade_class(subs: list[str], env: dict[str, str], out: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([*cli(), "grade", *subs, "--format", "json", "--no-cache", "--jobs", "2", "--out", str(out),
                    *extra], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--class-size", type=int, default=0)
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("--memory", type=int, default=0, metavar="N", help="also a class of N for the parent's RSS")
    ap.add_argument("--repeat", type=int, default=0, metavar="R",
                    help="class runs, each between two anchor runs (default: 1 with --quick, else 3)")
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    args.repeat = args.repeat or (1 if args.quick else 3)
    n = args.class_size or (40 if args.quick else 200)
    res: dict[str, Any] = {"class_size": n, "cpus": os.cpu_count()}
    tmp = Path(tempfile.mkdtemp(prefix="attnp-side-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "xdg"), ATTN_PRACTICE_CACHE=str(tmp / "xdg" / "results"))
    try:
        subs = make_class(tmp / "class", n)
        one = subs[0]
        floor = median_of(reps, [sys.executable, "-c", "import numpy, pytest, hypothesis"])
        pytest_one = median_of(reps, [sys.executable, "-m", "pytest", "-q", *PLAIN,
                                      str(HERE / "anchor_test.py")], env=dict(os.environ, SUBMISSION=one), cwd=tmp)
        # one-time per machine and grader version: the recorded examples (grade does it itself)
        res["one_time_warm_s"] = timed([sys.executable, "-m", "attn_practice.grader.engine.warm"], env=env)
        grade_one = median_of(reps, [*cli(), "grade", one, "--format", "json", "--no-cache"], env=env)
        ws = tmp / "ws"
        subprocess.run([*cli(), "start", str(ws)], env=env, stdout=subprocess.DEVNULL, check=True)
        for stem in STEPS:
            shutil.copy(Path(one) / f"{stem}.py", ws / f"{stem}.py")
        check = median_of(reps, [*cli(), "check", "step3"], cwd=ws, env=env)
        src = (ws / "step3_softmax.py").read_text()
        (ws / "step3_softmax.py").write_text(src.replace(
            "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n",
            "def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:\n    while True:\n        pass\n", 1))
        stop = timed([*cli(), "check", "step3"], cwd=ws, env=env)
        pair_n = min(20, n)
        # Anchor, class, anchor, class, ..., anchor: each class run is set against the mean of
        # the anchors just before and after it (a shared machine's speed drifts over a minute).
        # With --dask, each stretch between anchors also grades the class on a LocalCluster,
        # first or second in turn, and its ratio is to the pool run beside it.
        pairs = [plain_pytest_pair_rate(subs[:pair_n], tmp)]
        times, dask_times = [], []
        for i in range(args.repeat):
            order = [False, True] if args.dask else [False]
            for on_dask in order[::-1] if i % 2 else order:
                if on_dask:
                    dask_times.append(grade_class(subs, env, tmp / "dask.json", "--dask", "local"))
                else:
                    times.append(grade_class(subs, env, tmp / "local.json"))
            pairs.append(plain_pytest_pair_rate(subs[:pair_n], tmp))
        ratios = [(n / t) / ((pairs[i] + pairs[i + 1]) / 2) for i, t in enumerate(times)]
        t_class, pytest_pair = statistics.median(times), statistics.median(pairs)
        rate = n / t_class
        res["anchors"] = {"floor_import_s": floor, "plain_pytest_one_s": pytest_one,
                          "plain_pytest_x2_per_s": pytest_pair, "plain_pytest_x2_n": pair_n,
                          "plain_pytest_x2_per_s_each": pairs}
        res["class"] = {"seconds": t_class, "per_s": rate,
                        "ratio_to_plain_pytest_x2": statistics.median(ratios),
                        "ratio_each_run": ratios, "seconds_each_run": times,
                        "machine_ms_per_submission": 1000 * (os.cpu_count() or 1) * t_class / n}
        res["grade_one"] = {"seconds": grade_one, "ratio_to_plain_pytest": grade_one / pytest_one}
        res["check_step3"] = {"seconds": check, "ratio_to_floor": check / floor}
        res["fast_stop"] = {"check_endless_loop_s": stop, "ratio_to_call_timeout": stop / 2.0,
                            "ratio_to_check": stop / check}
        bd = subprocess.run([sys.executable, str(HERE / "breakdown.py"), *subs[: min(30, n)]], env=env,
                            capture_output=True, text=True)
        res["breakdown"] = json.loads(bd.stdout) if bd.returncode == 0 else {"error": bd.stderr[-400:]}
        local = _without_timings(json.loads((tmp / "local.json").read_text()))
        if not args.quick:
            grade_class(subs, env, tmp / "again.json")
            res["class"]["same_report_twice"] = local == _without_timings(
                json.loads((tmp / "again.json").read_text()))
        if args.dask:
            t_dask = statistics.median(dask_times)
            same = local == _without_timings(json.loads((tmp / "dask.json").read_text()))
            each = [t / d for t, d in zip(times, dask_times, strict=True)]
            res["dask_local"] = {"seconds": t_dask, "per_s": n / t_dask, "ratio_to_pool": statistics.median(each),
                                 "ratio_each_run": each, "seconds_each_run": dask_times,
                                 "same_report_as_pool": same}
        if args.memory:
            big = make_class(tmp / "big", args.memory, seed=5)
            secs, mib = peak_rss_run([*cli(), "grade", *big, "--format", "csv", "--no-cache", "--jobs", "2",
                                      "--out", str(tmp / "big.csv")], env=env)
            res["memory"] = {"n": args.memory, "seconds": secs, "parent_peak_rss_mib": mib,
                             "ratio_to_1_gib": mib / 1024}
            if args.dask:
                secs, mib = peak_rss_run([*cli(), "grade", *big, "--format", "csv", "--no-cache", "--jobs", "2",
                                          "--dask", "local", "--out", str(tmp / "bigd.csv")], env=env)
                res["memory"]["dask_local"] = {"seconds": secs, "parent_and_scheduler_peak_rss_mib": mib}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["goals"] = GOALS
    (HERE / "side_by_side.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
